// kera_fp_sqrt: y = sqrt(a), IEEE 754 binary{EW,MW}, round to nearest even, subnormal
// inputs, Kera's canonical NaN; sqrt(-0) = -0, sqrt(x < 0) = NaN, sqrt(+inf) = +inf.
// The significand root is a restoring integer square root with at least MW+3 root bits
// and a sticky remainder, rounded once. Latency LATENCY cycles (>= 1).
module kera_fp_sqrt #(
    parameter EW = 8,
    parameter MW = 23,
    parameter LATENCY = 3
) (
    input            clk,
    input            rst,
    input            valid_in,
    input  [EW+MW:0] a,
    output           valid_out,
    output [EW+MW:0] y
);
  localparam N = EW + MW + 1;
  wire v1;
  wire [N-1:0] x;
  kera_fp_pipe #(N, 1) p_in (clk, rst, valid_in, a, v1, x);
  wire [N-1:0] r;
  kera_fp_sqrt_core #(EW, MW) core (x, r);
  kera_fp_pipe #(N, LATENCY - 1) p_out (clk, rst, v1, r, valid_out, y);
endmodule

module kera_fp_sqrt_core #(
    parameter EW = 8,
    parameter MW = 23
) (
    input      [EW+MW:0] a,
    output reg [EW+MW:0] y
);
  localparam N = EW + MW + 1;
  localparam S = (MW + 6) / 2;  // the radicand gets 2*S extra zero bits
  localparam RQ = (MW + 3 + 2 * S) / 2;  // root bits
  localparam XW = 2 * RQ;  // radicand bits (even)
  wire [N-1:0] cnan = {1'b0, {EW{1'b1}}, 1'b1, {(MW - 1) {1'b0}}};
  wire sa, za, ia, na;
  wire signed [15:0] ea;
  wire [MW:0] ma;
  kera_fp_unpack #(EW, MW) ua (a, sa, za, ia, na, ea, ma);
  // a = ma * 2^(ea - MW); make the exponent even, then widen the radicand
  wire odd = (ea - MW) & 1;
  wire [XW-1:0] rad = ({{(XW - MW - 1) {1'b0}}, ma} << odd) << (2 * S);
  wire signed [15:0] re = (ea - MW - $signed({15'd0, odd}) - 2 * S) >>> 1;
  reg [RQ-1:0] root;
  reg [RQ+1:0] rem, trial;
  integer i;
  always @* begin
    rem  = 0;
    root = 0;
    for (i = RQ - 1; i >= 0; i = i - 1) begin
      rem   = {rem[RQ-1:0], rad[2*i+:2]};
      trial = {root, 2'b01};
      if (rem >= trial) begin
        rem  = rem - trial;
        root = {root[RQ-2:0], 1'b1};
      end else root = {root[RQ-2:0], 1'b0};
    end
  end
  wire [N-1:0] rounded;
  kera_fp_round #(EW, MW, RQ) rnd (1'b0, re, root, rem != 0, rounded);
  always @* begin
    if (na || (sa && !za)) y = cnan;
    else if (za || ia) y = a;
    else y = rounded;
  end
endmodule
