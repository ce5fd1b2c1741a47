// kera_fp_div: y = a / b, IEEE 754 binary{EW,MW}, round to nearest even, subnormals in
// and out, Kera's canonical NaN; x/0 is +-inf (0/0 NaN). The significand quotient is a
// restoring division producing MW+4 quotient bits and a sticky remainder, rounded once.
// Latency LATENCY cycles (>= 1).
module kera_fp_div #(
    parameter EW = 8,
    parameter MW = 23,
    parameter LATENCY = 3
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
  wire v1;
  wire [2*N-1:0] in1;
  kera_fp_pipe #(2 * N, 1) p_in (clk, rst, valid_in, {a, b}, v1, in1);
  wire [N-1:0] r;
  kera_fp_div_core #(EW, MW) core (in1[2*N-1:N], in1[N-1:0], r);
  kera_fp_pipe #(N, LATENCY - 1) p_out (clk, rst, v1, r, valid_out, y);
endmodule

module kera_fp_div_core #(
    parameter EW = 8,
    parameter MW = 23
) (
    input      [EW+MW:0] a,
    input      [EW+MW:0] b,
    output reg [EW+MW:0] y
);
  localparam N = EW + MW + 1;
  localparam QW = MW + 4;
  wire [N-1:0] cnan = {1'b0, {EW{1'b1}}, 1'b1, {(MW - 1) {1'b0}}};
  wire sa, za, ia, na, sb, zb, ib, nb;
  wire signed [15:0] ea, eb;
  wire [MW:0] ma, mb;
  kera_fp_unpack #(EW, MW) ua (a, sa, za, ia, na, ea, ma);
  kera_fp_unpack #(EW, MW) ub (b, sb, zb, ib, nb, eb, mb);
  wire s = sa ^ sb;
  // ma, mb in [2^MW, 2^(MW+1)): q = floor(ma / mb * 2^(MW+3)) has MW+3 or MW+4 bits
  reg [QW-1:0] q;
  reg [MW+1:0] rem;
  integer i;
  always @* begin
    rem = {1'b0, ma};
    for (i = QW - 1; i >= 0; i = i - 1) begin
      if (rem >= {1'b0, mb}) begin
        q[i] = 1'b1;
        rem  = rem - {1'b0, mb};
      end else q[i] = 1'b0;
      rem = rem << 1;
    end
  end
  wire signed [15:0] qe = ea - eb - (MW + 3);
  wire [N-1:0] rounded;
  kera_fp_round #(EW, MW, QW) rnd (s, qe, q, rem != 0, rounded);
  always @* begin
    if (na || nb || (ia && ib) || (za && zb)) y = cnan;
    else if (ia || zb) y = {s, {EW{1'b1}}, {MW{1'b0}}};
    else if (za || ib) y = {s, {(N - 1) {1'b0}}};
    else y = rounded;
  end
endmodule
