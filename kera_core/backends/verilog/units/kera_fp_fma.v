// kera_fp_fma: y = a * b + c computed exactly and rounded once (IEEE fusedMultiplyAdd),
// binary{EW,MW}, round to nearest even, subnormals in and out, Kera's canonical NaN.
// Latency LATENCY cycles (>= 1).
//
// The exact product P (2*MW+2 bits, normalised operands) and c are placed in a window of
// T = 3*MW+8 bits with 3 guard bits below P. When c lies more than MAXK = 2*MW+3 bits
// above P, c is placed at MAXK and P replaced by a jammed sticky bit; when c lies below
// the window, its shifted-out bits are jammed into bit 0. In both cases the jammed value
// lies strictly between the same two rounding points as the exact one, and can never
// cancel to zero (the other operand's bit 0 is clear), so one rounding of the window sum
// is the correctly rounded result.
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
  wire v1;
  wire [3*N-1:0] in1;
  kera_fp_pipe #(3 * N, 1) p_in (clk, rst, valid_in, {a, b, c}, v1, in1);
  wire [N-1:0] r;
  kera_fp_fma_core #(EW, MW) core (in1[3*N-1:2*N], in1[2*N-1:N], in1[N-1:0], r);
  kera_fp_pipe #(N, LATENCY - 1) p_out (clk, rst, v1, r, valid_out, y);
endmodule

module kera_fp_fma_core #(
    parameter EW = 8,
    parameter MW = 23
) (
    input      [EW+MW:0] a,
    input      [EW+MW:0] b,
    input      [EW+MW:0] c,
    output reg [EW+MW:0] y
);
  localparam N = EW + MW + 1;
  localparam G = 3;
  localparam MAXK = 2 * MW + 3;
  localparam T = G + 3 * MW + 5;
  wire [N-1:0] cnan = {1'b0, {EW{1'b1}}, 1'b1, {(MW - 1) {1'b0}}};
  wire sa, za, ia, na, sb, zb, ib, nb, sc, zc, ic, nc;
  wire signed [15:0] ea, eb, ec;
  wire [MW:0] ma, mb, mc;
  kera_fp_unpack #(EW, MW) ua (a, sa, za, ia, na, ea, ma);
  kera_fp_unpack #(EW, MW) ub (b, sb, zb, ib, nb, eb, mb);
  kera_fp_unpack #(EW, MW) uc (c, sc, zc, ic, nc, ec, mc);
  wire sp = sa ^ sb;
  wire [2*MW+1:0] p = ma * mb;
  wire [T-1:0] pw0 = {{(T - 2 * MW - 2) {1'b0}}, p} << G;
  wire [T-1:0] cw0 = {{(T - MW - 1) {1'b0}}, mc};
  integer ep, k, sh;
  reg [T-1:0] pw, cw, s;
  reg signed [15:0] base;
  reg ss;
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
  wire [N-1:0] rounded;
  kera_fp_round #(EW, MW, T) rnd (ss, base, s, 1'b0, rounded);
  always @* begin
    if (na || nb || nc || (ia && zb) || (za && ib) || ((ia || ib) && ic && (sp != sc)))
      y = cnan;
    else if (ia || ib) y = {sp, {EW{1'b1}}, {MW{1'b0}}};
    else if (ic) y = c;
    else if (za || zb) y = zc ? {sp & sc, {(N - 1) {1'b0}}} : c;
    else if (s == 0) y = {N{1'b0}};
    else y = rounded;
  end
endmodule
