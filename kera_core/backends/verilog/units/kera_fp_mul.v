// kera_fp_mul: y = a * b, IEEE 754 binary{EW,MW}, round to nearest even, subnormals in
// and out, Kera's canonical NaN. The significand product is exact (2*MW+2 bits), then
// rounded once.
//
// Pipelined: one operation accepted per cycle, valid_out exactly LATENCY cycles (>= 1)
// after valid_in. The stages: the input registers; unpack and multiply (and the special
// cases); normalise; round. LATENCY = 1: the input registers only; 2 (the default): a
// register after the multiply; 3: also after normalising; each further cycle an output
// register (without one, y is the last stage's combinational logic).
module kera_fp_mul #(
    parameter EW = 8,
    parameter MW = 23,
    parameter LATENCY = 2
) (
    input            clk,
    input            rst,
    input            valid_in,
    input  [EW+MW:0] a,
    input  [EW+MW:0] b,
    output           valid_out,
    output [EW+MW:0] y
);
  localparam N = EW + MW + 1;
  localparam PW = 2 * MW + 2;
  localparam C1 = (LATENCY >= 2) ? 1 : 0;  // after the multiply
  localparam C2 = (LATENCY >= 3) ? 1 : 0;  // after normalising
  localparam NO = LATENCY - 1 - C1 - C2;  // output registers
  wire v1, v2, v3;
  wire [2*N-1:0] in1;
  kera_fp_pipe #(2 * N, 1) p_in (clk, rst, valid_in, {a, b}, v1, in1);
  // stage 1: unpack, multiply
  wire spec1, s1, spec2, s2, spec3, s3;
  wire [N-1:0] sy1, sy2, sy3;
  wire signed [15:0] pe1, pe2;
  wire [PW-1:0] p1, p2, np2, np3;
  wire signed [17:0] be2, be3;
  kera_fp_mul_prod #(EW, MW) pr (in1[2*N-1:N], in1[N-1:0], spec1, sy1, s1, pe1, p1);
  kera_fp_pipe #(N + PW + 18, C1) p_1 (clk, rst, v1, {spec1, sy1, s1, pe1, p1}, v2,
                                        {spec2, sy2, s2, pe2, p2});
  // stage 2: normalise
  kera_fp_norm #(EW, MW, PW) nm (pe2, p2, np2, be2);
  kera_fp_pipe #(N + PW + 20, C2) p_2 (clk, rst, v2, {spec2, sy2, s2, be2, np2}, v3,
                                        {spec3, sy3, s3, be3, np3});
  // stage 3: round
  wire [N-1:0] rounded;
  kera_fp_rnd #(EW, MW, PW) rd (s3, be3, np3, 1'b0, rounded);
  kera_fp_pipe #(N, NO) p_out (clk, rst, v3, spec3 ? sy3 : rounded, valid_out, y);
endmodule

// kera_fp_mul_prod: the exact product (-1)^s * p * 2^pe; spec: the result is sy (NaN, an
// infinity, a zero) instead of the rounded product.
module kera_fp_mul_prod #(
    parameter EW = 8,
    parameter MW = 23
) (
    input       [EW+MW:0] a,
    input       [EW+MW:0] b,
    output                spec,
    output reg  [EW+MW:0] sy,
    output                s,
    output signed  [15:0] pe,
    output    [2*MW+1:0] p
);
  localparam N = EW + MW + 1;
  wire [N-1:0] cnan = {1'b0, {EW{1'b1}}, 1'b1, {(MW - 1) {1'b0}}};
  wire sa, za, ia, na, sb, zb, ib, nb;
  wire signed [15:0] ea, eb;
  wire [MW:0] ma, mb;
  kera_fp_unpack #(EW, MW) ua (a, sa, za, ia, na, ea, ma);
  kera_fp_unpack #(EW, MW) ub (b, sb, zb, ib, nb, eb, mb);
  assign s = sa ^ sb;
  assign p = ma * mb;
  assign pe = ea + eb - 2 * MW;
  assign spec = na || nb || ia || ib || za || zb;
  always @* begin
    if (na || nb || (ia && zb) || (za && ib)) sy = cnan;
    else if (ia || ib) sy = {s, {EW{1'b1}}, {MW{1'b0}}};
    else if (za || zb) sy = {s, {(N - 1) {1'b0}}};
    else sy = {N{1'b0}};
  end
endmodule
