// Conversions (docs/semantics.md section 5).
//
// kera_fp_to_int: float -> IW-bit integer (SIGNED = 1: two's complement), truncating toward
// zero and saturating to [MIN, MAX]; NaN -> 0, +inf -> MAX, -inf -> MIN.
module kera_fp_to_int #(
    parameter EW = 8,
    parameter MW = 23,
    parameter IW = 32,
    parameter SIGNED = 1,
    parameter LATENCY = 2
) (
    input            clk,
    input            rst,
    input            valid_in,
    input  [EW+MW:0] a,
    output           valid_out,
    output [IW-1:0]  y
);
  localparam N = EW + MW + 1;
  wire v1;
  wire [N-1:0] x;
  kera_fp_pipe #(N, 1) p_in (clk, rst, valid_in, a, v1, x);
  wire [IW-1:0] r;
  kera_fp_to_int_core #(EW, MW, IW, SIGNED) core (x, r);
  kera_fp_pipe #(IW, LATENCY - 1) p_out (clk, rst, v1, r, valid_out, y);
endmodule

module kera_fp_to_int_core #(
    parameter EW = 8,
    parameter MW = 23,
    parameter IW = 32,
    parameter SIGNED = 1
) (
    input      [EW+MW:0] a,
    output reg [IW-1:0]  y
);
  localparam N = EW + MW + 1;
  localparam BIAS = (1 << (EW - 1)) - 1;
  wire [EW-1:0] ef = a[N-2:MW];
  wire s = a[N-1];
  wire nan = (&ef) && (a[MW-1:0] != 0);
  wire [IW-1:0] imax = SIGNED ? {1'b0, {(IW - 1) {1'b1}}} : {IW{1'b1}};
  wire [IW-1:0] imin = SIGNED ? {1'b1, {(IW - 1) {1'b0}}} : {IW{1'b0}};
  integer e;
  reg [MW+IW:0] m;
  always @* begin
    e = ef - BIAS;  // unbiased exponent; |a| < 1 when e < 0 (zeros and subnormals too)
    if (e < 0) m = 0;
    else if (e <= MW) m = {1'b1, a[MW-1:0]} >> (MW - e);
    else if (e < IW) m = {1'b1, a[MW-1:0]} << (e - MW);
    else m = 0;
    if (nan) y = 0;
    else if (!s) y = (e >= IW - SIGNED) ? imax : m[IW-1:0];
    else if (!SIGNED) y = 0;
    else y = (e >= IW - 1) ? imin : -m[IW-1:0];
  end
endmodule

// kera_int_to_fp: IW-bit integer (SIGNED = 1: two's complement) -> float, rounded to
// nearest even directly from the integer (no double rounding through a wider format).
module kera_int_to_fp #(
    parameter EW = 8,
    parameter MW = 23,
    parameter IW = 32,
    parameter SIGNED = 1,
    parameter LATENCY = 2
) (
    input            clk,
    input            rst,
    input            valid_in,
    input  [IW-1:0]  a,
    output           valid_out,
    output [EW+MW:0] y
);
  localparam N = EW + MW + 1;
  wire v1;
  wire [IW-1:0] x;
  kera_fp_pipe #(IW, 1) p_in (clk, rst, valid_in, a, v1, x);
  wire s = SIGNED && x[IW-1];
  wire [IW-1:0] mag = s ? -x : x;
  wire [N-1:0] r;
  kera_fp_round #(EW, MW, IW) rnd (s, 16'sd0, mag, 1'b0, r);
  kera_fp_pipe #(N, LATENCY - 1) p_out (clk, rst, v1, r, valid_out, y);
endmodule

// kera_fp_convert: float format (EWI, MWI) -> (EWO, MWO): exact when widening, rounded
// to nearest even (into the subnormals, to infinity past the largest finite) when
// narrowing; NaN -> the output format's canonical NaN.
module kera_fp_convert #(
    parameter EWI = 8,
    parameter MWI = 23,
    parameter EWO = 11,
    parameter MWO = 52,
    parameter LATENCY = 2
) (
    input              clk,
    input              rst,
    input              valid_in,
    input  [EWI+MWI:0] a,
    output             valid_out,
    output [EWO+MWO:0] y
);
  localparam NI = EWI + MWI + 1;
  localparam NO = EWO + MWO + 1;
  wire v1;
  wire [NI-1:0] x;
  kera_fp_pipe #(NI, 1) p_in (clk, rst, valid_in, a, v1, x);
  wire s, z, inf, nan;
  wire signed [15:0] e;
  wire [MWI:0] m;
  kera_fp_unpack #(EWI, MWI) u (x, s, z, inf, nan, e, m);
  wire [NO-1:0] rounded;
  kera_fp_round #(EWO, MWO, MWI + 1) rnd (s, e - MWI, m, 1'b0, rounded);
  wire [NO-1:0] cnan = {1'b0, {EWO{1'b1}}, 1'b1, {(MWO - 1) {1'b0}}};
  wire [NO-1:0] r = nan ? cnan : inf ? {s, {EWO{1'b1}}, {MWO{1'b0}}} : rounded;
  kera_fp_pipe #(NO, LATENCY - 1) p_out (clk, rst, v1, r, valid_out, y);
endmodule
