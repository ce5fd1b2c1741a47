"""The Verilog backend (issue 21). So far: Kera's own IEEE 754 float units (``float_units``,
``units/*.v``) and their exact reference (``float_ref``); see docs/targets/verilog.md."""
