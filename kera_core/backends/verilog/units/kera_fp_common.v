// Kera float units: shared pieces (Verilog-2005, synthesizable).
//
// Formats are parameterised by EW (exponent bits) and MW (stored fraction bits):
// binary32 is EW=8, MW=23; binary64 is EW=11, MW=52. A float is {sign, exponent, fraction},
// EW+MW+1 bits. Kera's canonical NaN is the positive quiet NaN with a zero payload
// (docs/semantics.md section 3): {1'b0, {EW{1'b1}}, 1'b1, {MW-1{1'b0}}}.

// kera_fp_pipe: N register stages for a data word and its valid bit (N = 0: a wire).
// Only the valid bits are reset (synchronous, active high).
module kera_fp_pipe #(
    parameter W = 1,
    parameter N = 1
) (
    input          clk,
    input          rst,
    input          vi,
    input  [W-1:0] di,
    output         vo,
    output [W-1:0] dout
);
  generate
    if (N == 0) begin : g_wire
      assign vo   = vi;
      assign dout = di;
    end else begin : g_regs
      reg [W-1:0] d[0:N-1];
      reg [N-1:0] v;
      integer k;
      always @(posedge clk) begin
        d[0] <= di;
        for (k = 1; k < N; k = k + 1) d[k] <= d[k-1];
        if (rst) v <= {N{1'b0}};
        else v <= {v, vi};
      end
      assign vo   = v[N-1];
      assign dout = d[N-1];
    end
  endgenerate
endmodule

// kera_fp_unpack: classify a float and give its value as sig * 2^(exp - MW) with sig
// normalised (sig[MW] = 1) also for subnormal inputs; sig = 0 for a zero.
module kera_fp_unpack #(
    parameter EW = 8,
    parameter MW = 23
) (
    input      [EW+MW:0] a,
    output               sign,
    output               is_zero,
    output               is_inf,
    output               is_nan,
    output reg signed [15:0] exp,
    output reg [   MW:0] sig
);
  localparam BIAS = (1 << (EW - 1)) - 1;
  wire [EW-1:0] ef = a[EW+MW-1:MW];
  wire [MW-1:0] f = a[MW-1:0];
  assign sign    = a[EW+MW];
  assign is_zero = (ef == 0) && (f == 0);
  assign is_inf  = (&ef) && (f == 0);
  assign is_nan  = (&ef) && (f != 0);
  integer i, lz;
  always @* begin
    if (ef == 0) begin
      lz = MW + 1;
      for (i = 0; i < MW; i = i + 1) if (f[i]) lz = MW - i;
      sig = {1'b0, f} << lz;
      exp = 1 - BIAS - lz;
    end else begin
      i   = 0;  // assigned on every path, so synthesis infers no latch
      lz  = 0;
      sig = {1'b1, f};
      exp = ef - BIAS;
    end
  end
endmodule

// kera_fp_round: the one rounding step every unit shares. The exact (or sticky-jammed)
// result is (-1)^sign * (sig + sticky*epsilon) * 2^exp, sig a W-bit integer (any
// alignment, sig != 0 unless the result is a zero). Normalises, denormalises into the
// subnormal range (no flush), rounds to nearest even, overflows to infinity. It is two
// halves, which the pipelined units (add, mul, fma) separate by a register stage:
// kera_fp_norm (leading-zero count, normalising shift, the biased exponent) and
// kera_fp_rnd (the subnormal shift with sticky, round to nearest even, overflow).
module kera_fp_round #(
    parameter EW = 8,
    parameter MW = 23,
    parameter W  = 32
) (
    input                  sign,
    input  signed   [15:0] exp,
    input          [W-1:0] sig,
    input                  sticky,
    output       [EW+MW:0] y
);
  wire [W-1:0] nsig;
  wire signed [17:0] be;
  kera_fp_norm #(EW, MW, W) nm (exp, sig, nsig, be);
  kera_fp_rnd #(EW, MW, W) rd (sign, be, nsig, sticky, y);
endmodule

// kera_fp_norm: sig shifted left until its top bit is set (nsig; 0 for 0), and the biased
// exponent of that top bit: the value is 1.f * 2^(be - BIAS).
module kera_fp_norm #(
    parameter EW = 8,
    parameter MW = 23,
    parameter W  = 32
) (
    input  signed     [15:0] exp,
    input            [W-1:0] sig,
    output reg       [W-1:0] nsig,
    output reg signed [17:0] be
);
  localparam BIAS = (1 << (EW - 1)) - 1;
  integer i, lz;
  always @* begin
    lz = W;
    for (i = 0; i < W; i = i + 1) if (sig[i]) lz = W - 1 - i;
    nsig = sig << lz;
    be   = exp - lz + W - 1 + BIAS;
  end
endmodule

// kera_fp_rnd: round kera_fp_norm's (nsig, be) with the sticky bit to binary{EW,MW}.
module kera_fp_rnd #(
    parameter EW = 8,
    parameter MW = 23,
    parameter W  = 32
) (
    input                    sign,
    input  signed     [17:0] be_in,
    input            [W-1:0] nsig,
    input                    sticky,
    output reg     [EW+MW:0] y
);
  localparam XW = W + MW + 3;
  localparam EMAXF = (1 << EW) - 1;
  integer be, sh;
  reg [XW-1:0] norm, x;
  reg st, rb, lsb, inc;
  reg [EW+MW-1:0] mag;
  reg [EW-1:0] fe;
  always @* begin
    // norm = 1.f * 2^(XW-1): the value is 1.f * 2^(be - BIAS)
    norm = {nsig, {(MW + 3) {1'b0}}};
    be   = be_in;
    if (be < 1) begin
      sh = 1 - be;
      fe = {EW{1'b0}};
    end else begin
      sh = 0;
      fe = be;
    end
    if (sh > XW) sh = XW;
    st  = sticky | (|(norm & ~({XW{1'b1}} << sh)));
    x   = norm >> sh;
    lsb = x[XW-1-MW];
    rb  = x[XW-2-MW];
    st  = st | (|x[XW-3-MW:0]);
    inc = rb & (st | lsb);
    // {fe, fraction} + inc: a carry out of the fraction bumps the exponent (subnormal to
    // normal, or to the next binade, or to infinity's encoding)
    mag = {fe, x[XW-2:XW-1-MW]} + inc;
    if (nsig == 0) y = {sign, {(EW + MW) {1'b0}}};
    else if (be >= EMAXF) y = {sign, {EW{1'b1}}, {MW{1'b0}}};
    else y = {sign, mag};
  end
endmodule
