// kera_fp_add: y = a + b (sub = 0) or a - b (sub = 1), IEEE 754 binary{EW,MW},
// round to nearest even, subnormals in and out, Kera's canonical NaN for every NaN.
//
// Pipelined: one operation accepted per cycle, valid_out exactly LATENCY cycles (>= 1)
// after valid_in. The stages: the input registers; compare, align, add (and the special
// cases: NaN, infinities, an exact zero); normalise (leading-zero count and shift);
// round. LATENCY = 1: the input registers only, the rest combinational; 2 (the default):
// a register after the add; 3: also after normalising; each further cycle an output
// register. Without output registers y is the last stage's combinational logic (the
// kernel's controller captures it into a register).
module kera_fp_add #(
    parameter EW = 8,
    parameter MW = 23,
    parameter LATENCY = 2
) (
    input            clk,
    input            rst,
    input            valid_in,
    input  [EW+MW:0] a,
    input  [EW+MW:0] b,
    input            sub,
    output           valid_out,
    output [EW+MW:0] y
);
  localparam N = EW + MW + 1;
  localparam SW = MW + 5;
  localparam C1 = (LATENCY >= 2) ? 1 : 0;  // after the add
  localparam C2 = (LATENCY >= 3) ? 1 : 0;  // after normalising
  localparam NO = LATENCY - 1 - C1 - C2;  // output registers
  wire v1, v2, v3;
  wire [2*N:0] in1;
  kera_fp_pipe #(2 * N + 1, 1) p_in (clk, rst, valid_in, {a, b, sub}, v1, in1);
  // stage 1: align and add
  wire spec1, sx1, spec2, sx2, spec3, sx3;
  wire [N-1:0] sy1, sy2, sy3;
  wire signed [15:0] re1, re2;
  wire [SW-1:0] s1, s2, ns2, ns3;
  wire signed [17:0] be2, be3;
  kera_fp_add_align #(EW, MW) al (in1[2*N:N+1], in1[N:1], in1[0], spec1, sy1, sx1, re1, s1);
  kera_fp_pipe #(N + SW + 18, C1) p_1 (clk, rst, v1, {spec1, sy1, sx1, re1, s1}, v2,
                                        {spec2, sy2, sx2, re2, s2});
  // stage 2: normalise
  kera_fp_norm #(EW, MW, SW) nm (re2, s2, ns2, be2);
  kera_fp_pipe #(N + SW + 20, C2) p_2 (clk, rst, v2, {spec2, sy2, sx2, be2, ns2}, v3,
                                        {spec3, sy3, sx3, be3, ns3});
  // stage 3: round
  wire [N-1:0] rounded;
  kera_fp_rnd #(EW, MW, SW) rd (sx3, be3, ns3, 1'b0, rounded);
  kera_fp_pipe #(N, NO) p_out (clk, rst, v3, spec3 ? sy3 : rounded, valid_out, y);
endmodule

// kera_fp_add_align: the operand of larger magnitude first, the other aligned to it with
// 3 guard bits (the last one jams), added or subtracted: the exact sum is
// (-1)^sx * (s + sticky) * 2^re. spec: the result is sy (NaN, an infinity, an exact zero)
// instead of the rounded sum.
module kera_fp_add_align #(
    parameter EW = 8,
    parameter MW = 23
) (
    input             [EW+MW:0] a,
    input             [EW+MW:0] b,
    input                       sub,
    output reg                  spec,
    output reg        [EW+MW:0] sy,
    output                      sx,
    output signed        [15:0] re,
    output reg          [MW+4:0] s
);
  localparam N = EW + MW + 1;
  localparam BIAS = (1 << (EW - 1)) - 1;
  localparam SW = MW + 5;  // carry, MW+1 significand bits, 3 guard bits (last one jams)
  wire [N-1:0] cnan = {1'b0, {EW{1'b1}}, 1'b1, {(MW - 1) {1'b0}}};
  wire sa = a[N-1];
  wire sb = b[N-1] ^ sub;
  wire a_inf = (&a[N-2:MW]) && (a[MW-1:0] == 0);
  wire b_inf = (&b[N-2:MW]) && (b[MW-1:0] == 0);
  wire a_nan = (&a[N-2:MW]) && (a[MW-1:0] != 0);
  wire b_nan = (&b[N-2:MW]) && (b[MW-1:0] != 0);
  // the operand of larger magnitude first
  wire swap = a[N-2:0] < b[N-2:0];
  wire [N-2:0] mx = swap ? b[N-2:0] : a[N-2:0];
  wire [N-2:0] mn = swap ? a[N-2:0] : b[N-2:0];
  assign sx = swap ? sb : sa;
  wire sn = swap ? sa : sb;
  wire [EW-1:0] ex = (mx[N-2:MW] == 0) ? 1 : mx[N-2:MW];
  wire [EW-1:0] en = (mn[N-2:MW] == 0) ? 1 : mn[N-2:MW];
  wire [SW-1:0] fx = {1'b0, mx[N-2:MW] != 0, mx[MW-1:0], 3'b000};
  wire [SW-1:0] fn = {1'b0, mn[N-2:MW] != 0, mn[MW-1:0], 3'b000};
  wire [EW-1:0] d = ex - en;
  assign re = ex - BIAS - MW - 3;
  reg [SW-1:0] al;
  reg st;
  always @* begin
    if (d >= SW) begin
      al = 0;
      st = fn != 0;
    end else begin
      al = fn >> d;
      st = |(fn & ~({SW{1'b1}} << d));
    end
    s = (sx == sn) ? fx + {al[SW-1:1], al[0] | st} : fx - {al[SW-1:1], al[0] | st};
    spec = 1'b1;
    if (a_nan || b_nan || (a_inf && b_inf && sa != sb)) sy = cnan;
    else if (a_inf) sy = {sa, {EW{1'b1}}, {MW{1'b0}}};
    else if (b_inf) sy = {sb, {EW{1'b1}}, {MW{1'b0}}};
    else if (s == 0) sy = {sx & sn, {(N - 1) {1'b0}}};
    else begin
      spec = 1'b0;
      sy   = {N{1'b0}};
    end
  end
endmodule
