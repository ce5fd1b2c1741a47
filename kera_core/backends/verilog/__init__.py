"""The Verilog backend (issue 21): Kera's own IEEE 754 float units (``float_units``,
``units/*.v``) and their exact reference (``float_ref``); kernels as hardware — a
function's loop program as one Verilog-2005 module (``datapath``, ``schedule``,
``compile``), simulated with iverilog or verilator (``testbench``), synthesis figures
(``report``). See docs/targets/verilog.md."""
