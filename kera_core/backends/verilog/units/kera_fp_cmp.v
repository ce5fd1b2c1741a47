// kera_fp_cmp: IEEE comparisons of a and b: eq, lt, le, un (unordered: either is NaN).
// Every comparison involving NaN is false except un; -0 == +0. gt/ge are lt/le with the
// operands swapped, ne is !eq. Latency LATENCY cycles (>= 1).
module kera_fp_cmp #(
    parameter EW = 8,
    parameter MW = 23,
    parameter LATENCY = 1
) (
    input            clk,
    input            rst,
    input            valid_in,
    input  [EW+MW:0] a,
    input  [EW+MW:0] b,
    output           valid_out,
    output           eq,
    output           lt,
    output           le,
    output           un
);
  localparam N = EW + MW + 1;
  wire v1;
  wire [2*N-1:0] in1;
  kera_fp_pipe #(2 * N, 1) p_in (clk, rst, valid_in, {a, b}, v1, in1);
  wire [N-1:0] x = in1[2*N-1:N];
  wire [N-1:0] z = in1[N-1:0];
  wire xn = (&x[N-2:MW]) && (x[MW-1:0] != 0);
  wire zn = (&z[N-2:MW]) && (z[MW-1:0] != 0);
  wire both0 = (x[N-2:0] == 0) && (z[N-2:0] == 0);
  wire r_un = xn | zn;
  wire r_eq = !r_un && ((x == z) || both0);
  // magnitude order, then the signs
  wire mlt = x[N-2:0] < z[N-2:0];
  wire mgt = x[N-2:0] > z[N-2:0];
  wire r_lt = !r_un && !both0 && ((x[N-1] != z[N-1]) ? x[N-1] : (x[N-1] ? mgt : mlt));
  wire [3:0] r = {r_eq, r_lt, r_lt | r_eq, r_un};
  kera_fp_pipe #(4, LATENCY - 1) p_out (clk, rst, v1, r, valid_out, {eq, lt, le, un});
endmodule

// kera_fp_minmax: IEEE 754-2019 minimum (is_max = 0) / maximum (is_max = 1) as Kera
// defines them: NaN (canonical) if either operand is NaN, otherwise the smaller/larger with
// -0 < +0. Latency LATENCY cycles (>= 1).
module kera_fp_minmax #(
    parameter EW = 8,
    parameter MW = 23,
    parameter LATENCY = 1
) (
    input            clk,
    input            rst,
    input            valid_in,
    input  [EW+MW:0] a,
    input  [EW+MW:0] b,
    input            is_max,
    output           valid_out,
    output [EW+MW:0] y
);
  localparam N = EW + MW + 1;
  wire v1;
  wire [2*N:0] in1;
  kera_fp_pipe #(2 * N + 1, 1) p_in (clk, rst, valid_in, {a, b, is_max}, v1, in1);
  wire [N-1:0] x = in1[2*N:N+1];
  wire [N-1:0] z = in1[N:1];
  wire mx = in1[0];
  wire [N-1:0] cnan = {1'b0, {EW{1'b1}}, 1'b1, {(MW - 1) {1'b0}}};
  wire xn = (&x[N-2:MW]) && (x[MW-1:0] != 0);
  wire zn = (&z[N-2:MW]) && (z[MW-1:0] != 0);
  // x < z in the order -inf < ... < -0 < +0 < ... < +inf
  wire tlt = (x[N-1] != z[N-1]) ? x[N-1] : (x[N-1] ? (x[N-2:0] > z[N-2:0]) : (x[N-2:0] < z[N-2:0]));
  wire [N-1:0] r = (xn | zn) ? cnan : ((tlt ^ mx) ? x : z);
  kera_fp_pipe #(N, LATENCY - 1) p_out (clk, rst, v1, r, valid_out, y);
endmodule
