/**
 * @file Tree-sitter grammar for Kera, a statically typed, Rust-like systems language.
 * @license MIT
 *
 * The hand-written front end (`kera_core/syntax`) is the source of truth; this grammar mirrors
 * it rule for rule (see docs/language.md §15 and README.md in this directory):
 *
 * - Expressions are written as one precedence level per rule, exactly like the Pratt table
 *   `INFIX` / `CAST_BP` of `kera_core/syntax/parser/grammar/expressions.py`: assignment (right
 *   associative) < range (non-associative) < `||` < `&&` < comparisons (non-associative) <
 *   `|` < `^` < `&` < shifts < `+ -` < `* / %` < `as` < prefix `- ! & &mut` < postfix call /
 *   index / field. Postfix operators apply to primaries only, so `x as T(1)` is an error, as
 *   in the core parser. The numeric `prec` values below only settle the choices a
 *   context-free grammar leaves open (`return` takes the longest operand; a block-like
 *   expression right before a block's `}` is its tail).
 * - Expression rules exist in three contexts (see `expressionRules`), aliased back to the
 *   same node names: ordinary; the heads of `if`, `while` and `for`, where a struct literal
 *   is not allowed at the top level; and expression statements, where a leading `if`, `for`,
 *   `while` or `{` ends the statement at its `}`.
 * - Keywords, number literals, `&&`, nested block comments and string contents come from the
 *   external scanner (src/scanner.c), which lexes them exactly like kera_core's lexer:
 *   keywords are reserved everywhere, a number is one maximal token validated against the
 *   lexer's grammar of literals, and `&&` is always one token (maximal munch).
 */

/// <reference types="tree-sitter-cli/dsl" />
// @ts-check

const PREC = {
  assign: 1,
  range: 2,
  or: 3,
  and: 4,
  compare: 5,
  bitor: 6,
  bitxor: 7,
  bitand: 8,
  shift: 9,
  additive: 10,
  multiplicative: 11,
  cast: 12,
  unary: 13,
  postfix: 14,
};

// The core lexer's keyword table (kera_core/syntax/kinds.py: KEYWORDS), in scanner.c's order.
const KEYWORDS = [
  'as', 'break', 'const', 'continue', 'else', 'false', 'fn', 'for', 'if',
  'in', 'let', 'mut', 'pub', 'return', 'struct', 'true', 'use', 'while',
  'loop', 'match',
];

// Primitive type names are identifiers with a predefined meaning, not keywords (§4.1).
const PRIMITIVE_TYPES = ['bool', 'i8', 'i16', 'i32', 'i64', 'u8', 'u16', 'u32', 'u64', 'f32', 'f64'];

const ASSIGN_OPS = ['+=', '-=', '*=', '/=', '%=', '&=', '|=', '^=', '<<=', '>>='];
const COMPARE_OPS = ['==', '!=', '<', '<=', '>', '>='];

// Left-associative binary levels: [level, operand level, operators, precedence].
const BINARY_LEVELS = [
  ['_or_level', '_and_level', ['||'], PREC.or],
  ['_and_level', '_compare_level', ['&&'], PREC.and],
  ['_bitor_level', '_bitxor_level', ['|'], PREC.bitor],
  ['_bitxor_level', '_bitand_level', ['^'], PREC.bitxor],
  ['_bitand_level', '_shift_level', ['&'], PREC.bitand],
  ['_shift_level', '_additive_level', ['<<', '>>'], PREC.shift],
  ['_additive_level', '_multiplicative_level', ['+', '-'], PREC.additive],
  ['_multiplicative_level', '_cast_level', ['*', '/', '%'], PREC.multiplicative],
];

/**
 * `rule { , rule } [ , ]`, or nothing: the core parser's `delimited` lists.
 *
 * @param {RuleOrLiteral} rule
 * @returns {RuleOrLiteral}
 */
function commaList(rule) {
  return optional(seq(rule, repeat(seq(',', rule)), optional(',')));
}

/**
 * The expression rules for one context. Hidden helper rules are aliased to the visible node
 * names, so every context builds the same nodes.
 *
 * - `''`: an ordinary expression.
 * - `'_ns'` (no struct): the head of an `if`, `while` or `for`, where a struct literal is not
 *   allowed at the top level; brackets, blocks and argument lists open an ordinary context.
 * - `'_nb'` (no block start): an expression statement or a block's tail. A statement that
 *   starts with `if`, `for`, `while` or `{` ends at its closing `}` (that case is handled by
 *   `expression_statement` and `block`), so here the leftmost primary is not block-like; the
 *   right operands are ordinary expressions.
 *
 * @param {string} s the suffix of this context's rule names
 * @returns {Object<string, ($: any) => RuleOrLiteral>}
 */
function expressionRules(s) {
  /** @type {Object<string, ($: any) => RuleOrLiteral>} */
  const rules = {};
  // The leftmost operand stays in this context; other operands are in context `inner`.
  const inner = s === '_ns' ? '_ns' : '';
  const L = ($, name) => $[name + s];
  const R = ($, name) => $[name + inner];

  rules['_expression' + s] = $ => choice(
    alias(L($, '_assignment'), $.assignment_expression),
    alias(L($, '_compound_assignment'), $.compound_assignment_expr),
    L($, '_range_level'),
  );
  rules['_assignment' + s] = $ => prec.right(PREC.assign, seq(
    field('left', L($, '_range_level')),
    '=',
    field('right', R($, '_expression')),
  ));
  rules['_compound_assignment' + s] = $ => prec.right(PREC.assign, seq(
    field('left', L($, '_range_level')),
    field('operator', choice(...ASSIGN_OPS)),
    field('right', R($, '_expression')),
  ));

  // Ranges do not chain: `a..b..c` is an error (K0111).
  rules['_range_level' + s] = $ => choice(
    alias(L($, '_range'), $.range_expression),
    L($, '_or_level'),
  );
  rules['_range' + s] = $ => prec(PREC.range, seq(
    field('left', L($, '_or_level')),
    field('operator', choice('..', '..=')),
    field('right', R($, '_or_level')),
  ));

  for (const [level, operand, ops, p] of BINARY_LEVELS) {
    rules[level + s] = $ => choice(
      alias(L($, level + '_binary'), $.binary_expression),
      L($, operand),
    );
    rules[level + '_binary' + s] = $ => prec.left(p, seq(
      field('left', L($, level)),
      // @ts-ignore
      field('operator', choice(...ops)),
      field('right', R($, operand)),
    ));
  }

  // Comparisons do not chain: `a < b < c` is an error (K0105).
  rules['_compare_level' + s] = $ => choice(
    alias(L($, '_compare'), $.binary_expression),
    L($, '_bitor_level'),
  );
  rules['_compare' + s] = $ => prec(PREC.compare, seq(
    field('left', L($, '_bitor_level')),
    field('operator', choice(...COMPARE_OPS)),
    field('right', R($, '_bitor_level')),
  ));

  rules['_cast_level' + s] = $ => choice(
    alias(L($, '_cast'), $.cast_expression),
    L($, '_unary_level'),
  );
  rules['_cast' + s] = $ => prec.left(PREC.cast, seq(
    field('value', L($, '_cast_level')),
    'as',
    field('type', $._type),
  ));

  // Prefix operators and `return` start with a token, so they are the same rules in the
  // ordinary and the statement context.
  const prefix = s === '_nb' ? '' : s;
  rules['_unary_level' + s] = $ => choice(
    alias($['_unary' + prefix], $.unary_expression),
    alias($['_reference' + prefix], $.reference_expression),
    L($, '_postfix_level'),
  );
  if (s !== '_nb') {
    rules['_unary' + s] = $ => prec(PREC.unary, seq(
      field('operator', choice('-', '!')),
      field('operand', R($, '_unary_level')),
    ));
    rules['_reference' + s] = $ => prec(PREC.unary, seq(
      '&',
      optional($.mutable_specifier),
      field('value', R($, '_unary_level')),
    ));
    // `return` takes an operand whenever one can start, and the longest one.
    rules['_return' + s] = $ => prec.right(seq('return', optional(R($, '_expression'))));
  }

  // Postfix operators apply to primaries and postfix expressions only: `x as T(1)` and
  // `-x.y` mean what the core parser says (an error, and `-(x.y)`).
  rules['_postfix_level' + s] = $ => choice(
    alias(L($, '_call'), $.call_expression),
    alias(L($, '_index'), $.index_expression),
    alias(L($, '_field'), $.field_expression),
    L($, '_primary'),
  );
  rules['_call' + s] = $ => prec(PREC.postfix, seq(
    field('function', L($, '_postfix_level')),
    field('arguments', $.arguments),
  ));
  rules['_index' + s] = $ => prec(PREC.postfix, seq(
    field('value', L($, '_postfix_level')),
    field('indices', $.index_arguments),
  ));
  rules['_field' + s] = $ => prec(PREC.postfix, seq(
    field('value', L($, '_postfix_level')),
    '.',
    field('field', choice($._field_identifier, alias($.integer_literal, $.field_index))),
  ));

  rules['_primary' + s] = $ => choice(
    $._literal,
    $.constant_path,
    $.identifier,
    ...(s === '_ns' ? [] : [$.struct_expression]),
    $.unit_expression,
    $.parenthesized_expression,
    $.tuple_expression,
    $.array_expression,
    ...(s === '_nb' ? [] : [
      $.block, $.if_expression, $.for_expression, $.while_expression, $.loop_expression,
      $.match_expression,
    ]),
    alias($['_return' + prefix], $.return_expression),
    $.break_expression,
    $.continue_expression,
  );

  return rules;
}

module.exports = grammar({
  name: 'kera',

  extras: $ => [
    /[ \t\r\n\f\v]/,
    $.line_comment,
    $.doc_comment,
    $.block_comment,
  ],

  externals: $ => [
    $.block_comment,
    $.string_content,
    $.integer_literal,
    $.float_literal,
    $._invalid_token,
    $._error_sentinel,
    '&&',
    ...KEYWORDS,
  ],

  word: $ => $.identifier,

  rules: {
    source_file: $ => repeat($._item),

    // --- items -----------------------------------------------------------------------------

    _item: $ => choice(
      $.function_item,
      $.struct_item,
      $.const_item,
      $.use_declaration,
    ),

    // `use linalg::{axpy, dot as inner};`, `use a::b::f as g;` (language.md, "Modules"): each
    // `module` field is one segment of the module's path (an identifier followed by `::`).
    use_declaration: $ => seq('use', $._use_path, ';'),

    _use_path: $ => seq(
      field('module', $.identifier),
      '::',
      choice($._use_path, field('list', $.use_list), $.use_item),
    ),

    use_list: $ => seq('{', commaList($.use_item), '}'),

    use_item: $ => seq(
      field('name', $.identifier),
      optional(seq('as', field('alias', $.identifier))),
    ),

    visibility_modifier: _ => 'pub',

    mutable_specifier: _ => 'mut',

    function_item: $ => seq(
      optional($.visibility_modifier),
      'fn',
      field('name', $.identifier),
      optional(field('type_parameters', $.type_parameters)),
      optional(field('dimensions', $.dimension_parameters)),
      field('parameters', $.parameters),
      optional(seq('->', field('return_type', $._type))),
      optional(field('effects', $.effect_list)),
      field('body', $.block),
    ),

    // `<T: Float, U: Int>`: element-type parameters and their bounds (language.md §3.1.1)
    type_parameters: $ => seq('<', commaList($.type_parameter), '>'),

    type_parameter: $ => seq(
      field('name', $._type_identifier),
      ':',
      field('bound', alias($.identifier, $.bound)),
    ),

    dimension_parameters: $ => seq('[', commaList($.identifier), ']'),

    parameters: $ => seq('(', commaList($.parameter), ')'),

    parameter: $ => seq(
      optional($.mutable_specifier),
      field('name', $.identifier),
      ':',
      field('type', $._type),
    ),

    effect_list: $ => seq(
      '!',
      alias($.identifier, $.effect),
      repeat(seq(',', alias($.identifier, $.effect))),
    ),

    struct_item: $ => seq(
      optional($.visibility_modifier),
      'struct',
      field('name', $._type_identifier),
      field('body', $.field_declaration_list),
    ),

    field_declaration_list: $ => seq('{', commaList($.field_declaration), '}'),

    field_declaration: $ => seq(
      optional($.visibility_modifier),
      field('name', $._field_identifier),
      ':',
      field('type', $._type),
    ),

    const_item: $ => seq(
      optional($.visibility_modifier),
      'const',
      field('name', $.identifier),
      ':',
      field('type', $._type),
      '=',
      field('value', $._expression),
      ';',
    ),

    // --- types -----------------------------------------------------------------------------

    _type: $ => choice(
      $.reference_type,
      $.space_type,
      $._base_type,
    ),

    reference_type: $ => seq(
      '&',
      optional($.mutable_specifier),
      field('type', $._type),
    ),

    space_type: $ => seq(
      field('type', $._base_type),
      field('space', $.memory_space),
    ),

    memory_space: $ => seq('@', field('name', $.identifier)),

    _base_type: $ => choice(
      $.unit_type,
      $.tuple_type,
      $.parenthesized_type,
      $.primitive_type,
      $._type_identifier,
      $.tensor_type,
    ),

    unit_type: _ => seq('(', ')'),

    // `(f32, i64)`, `(f32,)`: a tuple needs a comma; `(f32)` is `f32` in parentheses.
    tuple_type: $ => seq('(', $._type, ',', commaList($._type), ')'),

    parenthesized_type: $ => seq('(', $._type, ')'),

    primitive_type: _ => choice(...PRIMITIVE_TYPES),

    // A type name followed by `[` always starts a shape (even after `as`).
    tensor_type: $ => prec(1, seq(
      field('element', choice($.primitive_type, $._type_identifier)),
      field('shape', $.shape),
    )),

    shape: $ => seq('[', commaList($._dimension), ']'),

    // A dimension: a size, a name, or `+ - * /` over them with `*` `/` binding tighter
    // (language.md §7.5); the checker decides which of these are sizes.
    _dimension: $ => choice(
      $.integer_literal,
      $.identifier,
      $.dimension_binary,
      $.dimension_parenthesized,
    ),

    dimension_binary: $ => choice(
      prec.left(PREC.multiplicative, seq(
        field('left', $._dimension),
        field('operator', choice('*', '/')),
        field('right', $._dimension),
      )),
      prec.left(PREC.additive, seq(
        field('left', $._dimension),
        field('operator', choice('+', '-')),
        field('right', $._dimension),
      )),
    ),

    dimension_parenthesized: $ => seq('(', $._dimension, ')'),

    // --- statements ------------------------------------------------------------------------

    // `{ stmt* tail? }`. A tail that starts with `if`, `for`, `while` or `{` is just that
    // block-like expression (`{ if c { a } else { b } + 1 }` is an error, as in the core).
    block: $ => seq(
      '{',
      repeat($._statement),
      optional(choice($._expression_nb, $._block_like)),
      '}',
    ),

    _statement: $ => choice(
      $.empty_statement,
      $.let_declaration,
      $.expression_statement,
    ),

    empty_statement: _ => ';',

    let_declaration: $ => seq(
      'let',
      choice(
        seq(optional($.mutable_specifier), field('name', $.identifier)),
        field('pattern', $.tuple_pattern),
      ),
      optional(seq(':', field('type', $._type))),
      optional(seq('=', field('value', $._expression))),
      ';',
    ),

    // `(a, mut b, _, (c, d))`: the names a `let` binds from a tuple's elements.
    tuple_pattern: $ => seq('(', commaList(choice($.tuple_pattern, $.binding_pattern)), ')'),

    binding_pattern: $ => seq(optional($.mutable_specifier), field('name', $.identifier)),

    // As in Rust, a statement that starts with `if`, `for`, `while`, `loop`, `match` or `{`
    // ends at its `}`
    // and needs no `;` (it takes one if present); one right before the block's `}` is the
    // block's tail instead (the low precedence).
    expression_statement: $ => choice(
      seq($._expression_nb, ';'),
      seq($._block_like, ';'),
      prec(-1, $._block_like),
    ),

    _block_like: $ => choice(
      $.block,
      $.if_expression,
      $.for_expression,
      $.while_expression,
      $.loop_expression,
      $.match_expression,
    ),

    // --- expressions -----------------------------------------------------------------------

    ...expressionRules(''),
    ...expressionRules('_ns'),
    ...expressionRules('_nb'),

    arguments: $ => seq('(', commaList($._expression), ')'),

    // A slice's ranges may leave out a bound (`x[..]`, `x[..hi]`, `x[lo..]`): only here,
    // as the core parser's `_index_element` (docs/language.md §6.14).
    index_arguments: $ => seq('[', commaList($._index_element), ']'),

    _index_element: $ => choice($._expression, alias($._open_range, $.range_expression)),

    _open_range: $ => choice(
      prec.right(PREC.range, seq(
        field('operator', choice('..', '..=')),
        optional(field('right', $._or_level)),
      )),
      prec(PREC.range, seq(
        field('left', $._or_level),
        field('operator', choice('..', '..=')),
      )),
    ),

    unit_expression: _ => seq('(', ')'),

    // `f32::PI`, `i32::MAX`: a constant a number type names (kera_core/sema/type_constants.py)
    constant_path: $ => seq(field('type', $.identifier), '::', field('name', $.identifier)),

    parenthesized_expression: $ => seq('(', $._expression, ')'),

    // `(a, b)`, `(a,)`: a tuple needs a comma.
    tuple_expression: $ => seq('(', $._expression, ',', commaList($._expression), ')'),

    array_expression: $ => seq('[', commaList($._expression), ']'),

    struct_expression: $ => seq(
      field('name', $._type_identifier),
      field('body', $.field_initializer_list),
    ),

    field_initializer_list: $ => seq('{', commaList($.field_initializer), '}'),

    field_initializer: $ => seq(
      field('field', $._field_identifier),
      ':',
      field('value', $._expression),
    ),

    if_expression: $ => seq(
      'if',
      field('condition', $._expression_ns),
      field('consequence', $.block),
      optional(field('alternative', $.else_clause)),
    ),

    else_clause: $ => seq('else', choice($.block, $.if_expression)),

    for_expression: $ => seq(
      'for',
      field('name', $.identifier),
      'in',
      field('value', $._expression_ns),
      field('body', $.block),
    ),

    while_expression: $ => seq(
      'while',
      field('condition', $._expression_ns),
      field('body', $.block),
    ),

    loop_expression: $ => seq('loop', field('body', $.block)),

    // `match x { 1 | 2 => a, 3..=9 => { b } _ => c }`: an arm whose body is a block needs no
    // comma (as the core parser's `_arms`).
    match_expression: $ => seq(
      'match',
      field('value', $._expression_ns),
      field('body', $.match_block),
    ),

    match_block: $ => seq(
      '{',
      repeat(choice(
        seq($.match_arm, ','),
        alias($._match_arm_block, $.match_arm),
      )),
      optional($.match_arm),
      '}',
    ),

    match_arm: $ => seq(
      field('pattern', $._match_pattern),
      '=>',
      field('value', $._expression),
    ),

    _match_arm_block: $ => prec(1, seq(
      field('pattern', $._match_pattern),
      '=>',
      field('value', $.block),
    )),

    _match_pattern: $ => choice($._pattern_range, $.or_pattern),

    or_pattern: $ => seq($._pattern_range, repeat1(seq('|', $._pattern_range))),

    _pattern_range: $ => choice($._pattern_atom, $.range_pattern),

    range_pattern: $ => seq(
      field('left', $._pattern_atom),
      '..=',
      field('right', $._pattern_atom),
    ),

    _pattern_atom: $ => choice(
      $.integer_literal,
      $.float_literal,
      $.boolean_literal,
      alias($._negative_literal, $.negative_literal),
      $.constant_path,
      $.identifier,
    ),

    _negative_literal: $ => seq('-', choice($.integer_literal, $.float_literal)),

    break_expression: _ => 'break',

    continue_expression: _ => 'continue',

    // --- literals and names ----------------------------------------------------------------

    _literal: $ => choice(
      $.integer_literal,
      $.float_literal,
      $.string_literal,
      $.boolean_literal,
    ),

    boolean_literal: _ => choice('true', 'false'),

    string_literal: $ => seq(
      '"',
      repeat(choice($.string_content, $.escape_sequence)),
      token.immediate('"'),
    ),

    escape_sequence: _ => token.immediate(seq(
      '\\',
      choice(/[nrt0\\"']/, /u\{[0-9A-Fa-f]{1,6}\}/),
    )),

    identifier: _ => /[A-Za-z_][A-Za-z0-9_]*/,

    _type_identifier: $ => alias($.identifier, $.type_identifier),

    _field_identifier: $ => alias($.identifier, $.field_identifier),

    // --- comments --------------------------------------------------------------------------

    // `//` comments, including `////…`, but not exactly `///` (a doc comment).
    line_comment: _ => token(seq('//', optional(choice(/[^/\n][^\n]*/, /\/\/[^\n]*/)))),

    doc_comment: _ => token(seq('///', optional(/[^/\n][^\n]*/))),
  },
});
