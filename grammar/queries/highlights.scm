; Highlighting for Kera.
;
; Patterns go from general to specific. Few nodes match more than one pattern (the
; SCREAMING_CASE heuristic, builtin calls, type and field names in special positions); for
; those the later, more specific pattern is meant to win, which is what `tree-sitter highlight`
; 0.22 and Neovim do. Plain variable references get no capture.

; Naming conventions: SCREAMING_CASE names are constants.
((identifier) @constant
  (#match? @constant "^[A-Z][A-Z0-9_]+$"))

; Comments
(line_comment) @comment
(block_comment) @comment
(doc_comment) @comment.documentation

; Literals
(integer_literal) @number
(float_literal) @number.float
(boolean_literal) @boolean
(string_literal) @string
(escape_sequence) @string.escape

; Types
(primitive_type) @type.builtin
(constant_path
  type: (identifier) @type.builtin
  name: (identifier) @constant.builtin)
(type_identifier) @type
(struct_item
  name: (type_identifier) @type.definition)
(shape
  (identifier) @variable.parameter)

; Memory spaces (`@device`) and effects (`! io, transfer`)
(memory_space
  "@" @attribute
  name: (identifier) @attribute)
(effect) @attribute
(effect_list
  "!" @punctuation.special)

; Fields
(field_identifier) @property

; Functions: definitions, calls and builtins
(function_item
  name: (identifier) @function)
(call_expression
  function: (identifier) @function.call)
(call_expression
  function: (identifier) @function.builtin
  (#any-of? @function.builtin
    "exp" "log" "sqrt" "tanh" "sigmoid" "abs" "fma" "minimum" "maximum" "sum" "max" "min"
    "argmax" "mean" "dot" "matmul" "softmax" "layernorm" "conv1d" "zeros" "full" "move_to"
    "copy_to" "print" "argmin" "transpose" "reshape" "broadcast_to" "outer" "concat" "stack"
    "where" "clone" "arange" "linspace" "floor" "ceil" "trunc" "round" "round_half_away"
    "copysign" "exp2" "log2" "expm1" "log1p" "hypot" "sin" "cos" "tan" "atan2"
    "pow" "erf" "erfc" "swap"))
(call_expression
  function: (field_expression
    field: (field_identifier) @function.call))
(call_expression
  function: (field_expression
    field: (field_identifier) @function.builtin
    (#any-of? @function.builtin "rev" "step_by")))

; Definitions: parameters, dimensions, variables, constants
(parameter
  name: (identifier) @variable.parameter)
(dimension_parameters
  (identifier) @variable.parameter)
(type_parameter
  name: (type_identifier) @type.parameter)
(type_parameter
  bound: (bound) @type.builtin)
(let_declaration
  name: (identifier) @variable)
(binding_pattern
  name: (identifier) @variable)
(field_index) @property
(for_expression
  name: (identifier) @variable)
(const_item
  name: (identifier) @constant)

; Modules: `use a::b::{f, g as h};`
(use_declaration
  module: (identifier) @module)
(use_item
  alias: (identifier) @variable)

; Keywords
"fn" @keyword.function
[
  "struct"
  "const"
  "let"
] @keyword
"use" @keyword.import
[
  "pub"
  "mut"
] @keyword.modifier
[
  "if"
  "else"
  "match"
] @keyword.conditional
[
  "for"
  "in"
  "while"
  "loop"
  "break"
  "continue"
] @keyword.repeat
"return" @keyword.return
"as" @keyword.operator

; Operators
[
  "="
  "+="
  "-="
  "*="
  "/="
  "%="
  "&="
  "|="
  "^="
  "<<="
  ">>="
  ".."
  "..="
  "||"
  "&&"
  "=="
  "!="
  "<"
  "<="
  ">"
  ">="
  "|"
  "^"
  "&"
  "<<"
  ">>"
  "+"
  "-"
  "*"
  "/"
  "%"
] @operator
(unary_expression
  "!" @operator)

; Punctuation
[
  "("
  ")"
  "["
  "]"
  "{"
  "}"
] @punctuation.bracket
[
  ","
  ";"
  ":"
  "."
  "->"
  "=>"
] @punctuation.delimiter
