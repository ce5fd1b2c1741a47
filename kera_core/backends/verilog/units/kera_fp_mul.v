// kera_fp_mul: y = a * b, IEEE 754 binary{EW,MW}, round to nearest even, subnormals in
// and out, Kera's canonical NaN. The significand product is exact (2*MW+2 bits), then
// rounded once. Latency LATENCY cycles (>= 1).
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
  wire v1;
  wire [2*N-1:0] in1;
  kera_fp_pipe #(2 * N, 1) p_in (clk, rst, valid_in, {a, b}, v1, in1);
  wire [N-1:0] r;
  kera_fp_mul_core #(EW, MW) core (in1[2*N-1:N], in1[N-1:0], r);
  kera_fp_pipe #(N, LATENCY - 1) p_out (clk, rst, v1, r, valid_out, y);
endmodule

module kera_fp_mul_core #(
    parameter EW = 8,
    parameter MW = 23
) (
    input      [EW+MW:0] a,
    input      [EW+MW:0] b,
    output reg [EW+MW:0] y
);
  localparam N = EW + MW + 1;
  wire [N-1:0] cnan = {1'b0, {EW{1'b1}}, 1'b1, {(MW - 1) {1'b0}}};
  wire sa, za, ia, na, sb, zb, ib, nb;
  wire signed [15:0] ea, eb;
  wire [MW:0] ma, mb;
  kera_fp_unpack #(EW, MW) ua (a, sa, za, ia, na, ea, ma);
  kera_fp_unpack #(EW, MW) ub (b, sb, zb, ib, nb, eb, mb);
  wire s = sa ^ sb;
  wire [2*MW+1:0] p = ma * mb;
  wire signed [15:0] pe = ea + eb - 2 * MW;
  wire [N-1:0] rounded;
  kera_fp_round #(EW, MW, 2 * MW + 2) rnd (s, pe, p, 1'b0, rounded);
  always @* begin
    if (na || nb || (ia && zb) || (za && ib)) y = cnan;
    else if (ia || ib) y = {s, {EW{1'b1}}, {MW{1'b0}}};
    else if (za || zb) y = {s, {(N - 1) {1'b0}}};
    else y = rounded;
  end
endmodule
