[
  (block)
  (field_declaration_list)
  (field_initializer_list)
  (match_block)
  (parameters)
  (arguments)
  (array_expression)
  (block_comment)
] @fold
