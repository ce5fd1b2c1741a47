// kera_fp_add: y = a + b (sub = 0) or a - b (sub = 1), IEEE 754 binary{EW,MW},
// round to nearest even, subnormals in and out, Kera's canonical NaN for every NaN.
// Latency LATENCY cycles (>= 1): inputs registered, then LATENCY-1 output stages.
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
  wire v1;
  wire [2*N:0] in1;
  kera_fp_pipe #(2 * N + 1, 1) p_in (clk, rst, valid_in, {a, b, sub}, v1, in1);
  wire [N-1:0] r;
  kera_fp_add_core #(EW, MW) core (in1[2*N:N+1], in1[N:1], in1[0], r);
  kera_fp_pipe #(N, LATENCY - 1) p_out (clk, rst, v1, r, valid_out, y);
endmodule

module kera_fp_add_core #(
    parameter EW = 8,
    parameter MW = 23
) (
    input      [EW+MW:0] a,
    input      [EW+MW:0] b,
    input                sub,
    output reg [EW+MW:0] y
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
  wire sx = swap ? sb : sa;
  wire sn = swap ? sa : sb;
  wire [EW-1:0] ex = (mx[N-2:MW] == 0) ? 1 : mx[N-2:MW];
  wire [EW-1:0] en = (mn[N-2:MW] == 0) ? 1 : mn[N-2:MW];
  wire [SW-1:0] fx = {1'b0, mx[N-2:MW] != 0, mx[MW-1:0], 3'b000};
  wire [SW-1:0] fn = {1'b0, mn[N-2:MW] != 0, mn[MW-1:0], 3'b000};
  wire [EW-1:0] d = ex - en;
  reg [SW-1:0] al, s;
  reg st;
  reg signed [15:0] re;
  wire [N-1:0] rounded;
  kera_fp_round #(EW, MW, SW) rnd (sx, re, s, 1'b0, rounded);
  always @* begin
    if (d >= SW) begin
      al = 0;
      st = fn != 0;
    end else begin
      al = fn >> d;
      st = |(fn & ~({SW{1'b1}} << d));
    end
    al[0] = al[0] | st;
    s = (sx == sn) ? fx + al : fx - al;
    re = ex - BIAS - MW - 3;
    if (a_nan || b_nan || (a_inf && b_inf && sa != sb)) y = cnan;
    else if (a_inf) y = {sa, {EW{1'b1}}, {MW{1'b0}}};
    else if (b_inf) y = {sb, {EW{1'b1}}, {MW{1'b0}}};
    else if (s == 0) y = {sx & sn, {(N - 1) {1'b0}}};
    else y = rounded;
  end
endmodule
