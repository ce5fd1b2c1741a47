// kera_fp_fma: y = a * b + c computed exactly and rounded once (IEEE fusedMultiplyAdd),
// binary{EW,MW}, round to nearest even, subnormals in and out, Kera's canonical NaN.
//
// The exact product P (2*MW+2 bits, normalised operands) and c are placed in a window of
// T = 3*MW+8 bits with 3 guard bits below P. When c lies more than MAXK = 2*MW+3 bits
// above P, c is placed at MAXK and P replaced by a jammed sticky bit; when c lies below
// the window, its shifted-out bits are jammed into bit 0. In both cases the jammed value
// lies strictly between the same two rounding points as the exact one, and can never
// cancel to zero (the other operand's bit 0 is clear), so one rounding of the window sum
// is the correctly rounded result.
//
// Pipelined: one operation accepted per cycle, valid_out exactly LATENCY cycles (>= 1)
// after valid_in. The stages: the input registers; unpack and multiply (and the special
// cases); align c and add; normalise; round. LATENCY = 1: the input registers only; 2: a
// register after the multiply; 3 (the default): also after the add; 4: also after
// normalising; each further cycle an output register (without one, y is the last stage's
// combinational logic).
module kera_fp_fma #(
    parameter EW = 8,
    parameter MW = 23,
    parameter LATENCY = 3
) (
    input            clk,
    input            rst,
    input            valid_in,
    input  [EW+MW:0] a,
    input  [EW+MW:0] b,
    input  [EW+MW:0] c,
    output           valid_out,
    output [EW+MW:0] y
);
  localparam N = EW + MW + 1;
  localparam PW = 2 * MW + 2;
  localparam T = 3 * MW + 8;
  localparam C1 = (LATENCY >= 2) ? 1 : 0;  // after the multiply
  localparam C2 = (LATENCY >= 3) ? 1 : 0;  // after the add
  localparam C3 = (LATENCY >= 4) ? 1 : 0;  // after normalising
  localparam NO = LATENCY - 1 - C1 - C2 - C3;  // output registers
  localparam W1 = N + PW + 3 * 16 + MW + 5;
  wire v1, v2, v3, v4;
  wire [3*N-1:0] in1;
  kera_fp_pipe #(3 * N, 1) p_in (clk, rst, valid_in, {a, b, c}, v1, in1);
  // stage 1: unpack, multiply
  wire spec1, sp1, sc1, zc1, spec2, sp2, sc2, zc2;
  wire [N-1:0] sy1, sy2;
  wire [PW-1:0] p1, p2;
  wire signed [15:0] ea1, eb1, ec1, ea2, eb2, ec2;
  wire [MW:0] mc1, mc2;
  kera_fp_fma_prod #(EW, MW) pr (in1[3*N-1:2*N], in1[2*N-1:N], in1[N-1:0], spec1, sy1, sp1,
                                 p1, ea1, eb1, ec1, sc1, zc1, mc1);
  kera_fp_pipe #(W1, C1) p_1 (clk, rst, v1, {spec1, sy1, sp1, p1, ea1, eb1, ec1, sc1, zc1, mc1},
                              v2, {spec2, sy2, sp2, p2, ea2, eb2, ec2, sc2, zc2, mc2});
  // stage 2: align and add
  wire spec3, ss3, spec4, ss4;
  wire [N-1:0] sy3, sy4;
  wire signed [15:0] base3;
  wire [T-1:0] s3, ns3, ns4;
  wire signed [17:0] be3, be4;
  kera_fp_fma_add #(EW, MW) ad (spec2, sy2, sp2, p2, ea2, eb2, ec2, sc2, zc2, mc2, spec3, sy3,
                                ss3, base3, s3);
  wire [N+T+17:0] st3;
  kera_fp_pipe #(N + T + 18, C2) p_2 (clk, rst, v2, {spec3, sy3, ss3, base3, s3}, v3, st3);
  // stage 3: normalise
  kera_fp_norm #(EW, MW, T) nm (st3[T+15:T], st3[T-1:0], ns3, be3);
  kera_fp_pipe #(N + T + 20, C3) p_3 (clk, rst, v3, {st3[N+T+17:T+16], be3, ns3}, v4,
                                      {spec4, sy4, ss4, be4, ns4});
  // stage 4: round
  wire [N-1:0] rounded;
  kera_fp_rnd #(EW, MW, T) rd (ss4, be4, ns4, 1'b0, rounded);
  kera_fp_pipe #(N, NO) p_out (clk, rst, v4, spec4 ? sy4 : rounded, valid_out, y);
endmodule

// kera_fp_fma_prod: the operands unpacked and the exact product of a and b; spec: the
// result is sy (a NaN, an infinity, c, or a signed zero) whatever the sum.
module kera_fp_fma_prod #(
    parameter EW = 8,
    parameter MW = 23
) (
    input         [EW+MW:0] a,
    input         [EW+MW:0] b,
    input         [EW+MW:0] c,
    output reg              spec,
    output reg    [EW+MW:0] sy,
    output                  sp,
    output      [2*MW+1:0] p,
    output signed    [15:0] ea,
    output signed    [15:0] eb,
    output signed    [15:0] ec,
    output                  sc,
    output                  zc,
    output         [MW:0] mc
);
  localparam N = EW + MW + 1;
  wire [N-1:0] cnan = {1'b0, {EW{1'b1}}, 1'b1, {(MW - 1) {1'b0}}};
  wire sa, za, ia, na, sb, zb, ib, nb, ic, nc;
  wire [MW:0] ma, mb;
  kera_fp_unpack #(EW, MW) ua (a, sa, za, ia, na, ea, ma);
  kera_fp_unpack #(EW, MW) ub (b, sb, zb, ib, nb, eb, mb);
  kera_fp_unpack #(EW, MW) uc (c, sc, zc, ic, nc, ec, mc);
  assign sp = sa ^ sb;
  assign p  = ma * mb;
  always @* begin
    spec = 1'b1;
    if (na || nb || nc || (ia && zb) || (za && ib) || ((ia || ib) && ic && (sp != sc)))
      sy = cnan;
    else if (ia || ib) sy = {sp, {EW{1'b1}}, {MW{1'b0}}};
    else if (ic) sy = c;
    else if (za || zb) sy = zc ? {sp & sc, {(N - 1) {1'b0}}} : c;
    else begin
      spec = 1'b0;
      sy   = {N{1'b0}};
    end
  end
endmodule

// kera_fp_fma_add: P and c in the T-bit window (see kera_fp_fma), added: the exact result
// is (-1)^ss * s * 2^base up to the jammed sticky bits; an exact zero sum is +0 (spec).
module kera_fp_fma_add #(
    parameter EW = 8,
    parameter MW = 23
) (
    input                  spec_in,
    input        [EW+MW:0] sy_in,
    input                  sp,
    input      [2*MW+1:0] p,
    input  signed   [15:0] ea,
    input  signed   [15:0] eb,
    input  signed   [15:0] ec,
    input                  sc,
    input                  zc,
    input           [MW:0] mc,
    output                 spec,
    output       [EW+MW:0] sy,
    output reg             ss,
    output reg signed [15:0] base,
    output reg [3*MW+7:0] s
);
  localparam N = EW + MW + 1;
  localparam G = 3;
  localparam MAXK = 2 * MW + 3;
  localparam T = G + 3 * MW + 5;
  wire [T-1:0] pw0 = {{(T - 2 * MW - 2) {1'b0}}, p} << G;
  wire [T-1:0] cw0 = {{(T - MW - 1) {1'b0}}, mc};
  integer ep, k, sh;
  reg [T-1:0] pw, cw;
  always @* begin
    ep = ea + eb - 2 * MW;  // P's bit 0 weighs 2^ep
    k  = ec - MW - ep;  // c's bit 0 relative to P's
    pw = pw0;
    base = ep - G;
    if (zc) cw = 0;
    else if (k > MAXK) begin
      cw = cw0 << (G + MAXK);
      pw = 1;
      base = ec - MW - MAXK - G;
    end else if (G + k >= 0) cw = cw0 << (G + k);
    else begin
      sh = -(G + k);
      if (sh > MW + 1) sh = MW + 1;
      cw = cw0 >> sh;
      cw[0] = cw[0] | (|(cw0 & ~({T{1'b1}} << sh)));
    end
    if (sp == sc) begin
      s  = pw + cw;
      ss = sp;
    end else if (pw >= cw) begin
      s  = pw - cw;
      ss = sp;
    end else begin
      s  = cw - pw;
      ss = sc;
    end
  end
  assign spec = spec_in || (s == 0);
  assign sy = spec_in ? sy_in : {N{1'b0}};
endmodule
