; Scopes: a function (its dimension parameters and parameters), each block, and a `for`
; loop (its variable is visible in the body only).
(function_item) @local.scope
(block) @local.scope
(for_expression) @local.scope

; Definitions
(dimension_parameters (identifier) @local.definition)
(parameter name: (identifier) @local.definition)
(let_declaration name: (identifier) @local.definition)
(binding_pattern name: (identifier) @local.definition)
(for_expression name: (identifier) @local.definition)

; References: names in expressions and in shapes (`f32[N]`)
(identifier) @local.reference
