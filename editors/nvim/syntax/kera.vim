" Kera syntax highlighting with regular expressions: colour for Neovim without a tree-sitter
" parser for Kera. When tree-sitter highlighting starts (require("kera").setup() with a parser,
" or nvim-treesitter) it takes over.
if exists("b:current_syntax")
  finish
endif

syn keyword keraConditional if else match
syn keyword keraRepeat for in while loop
syn keyword keraStatement return break continue
syn keyword keraKeyword fn struct const let nextgroup=keraDefName skipwhite
syn keyword keraModifier pub mut
syn keyword keraInclude use
syn keyword keraOperatorWord as
syn keyword keraBoolean true false
syn keyword keraType bool i8 i16 i32 i64 u8 u16 u32 u64 f32 f64
syn keyword keraBuiltin exp log sqrt tanh sigmoid abs fma minimum maximum sum max min argmax mean dot matmul softmax layernorm conv1d zeros full move_to copy_to print
syn keyword keraBuiltin argmin transpose reshape broadcast_to outer concat stack where clone arange linspace
syn keyword keraBuiltin floor ceil trunc round round_half_away copysign
syn keyword keraBuiltin exp2 log2 expm1 log1p hypot sin cos tan atan2 pow erf erfc swap

syn match keraDefName "\h\w*" contained
syn match keraFunctionCall "\<\h\w*\ze\s*("
syn match keraStructType "\<\u\w*\l\w*\>"
syn match keraConstant "\<\u[A-Z0-9_]\+\>"
syn match keraMemorySpace "@\s*\h\w*"
" Effects (`! io, transfer`) on the line of a function's signature; `!x` elsewhere is a "not".
syn match keraEffects "\%(\<fn\>.*\)\@<=!\s*\h\w*\%(\s*,\s*\h\w*\)*\ze\s*\%({\|$\)" contains=keraEffectBang
syn match keraEffectBang "!" contained

" Numbers: the literal grammar of docs/language.md §2.6-2.7, with suffixes.
syn match keraNumber "\<\d[0-9_]*\%(i8\|i16\|i32\|i64\|u8\|u16\|u32\|u64\|f32\|f64\)\=\>"
syn match keraNumber "\<0x[0-9A-Fa-f_]\+\%(i8\|i16\|i32\|i64\|u8\|u16\|u32\|u64\)\=\>"
syn match keraNumber "\<0o[0-7_]\+\%(i8\|i16\|i32\|i64\|u8\|u16\|u32\|u64\|f32\|f64\)\=\>"
syn match keraNumber "\<0b[01_]\+\%(i8\|i16\|i32\|i64\|u8\|u16\|u32\|u64\|f32\|f64\)\=\>"
syn match keraFloat "\<\d[0-9_]*\.\d[0-9_]*\%([eE][+-]\=\d[0-9_]*\)\=\%(f32\|f64\)\=\>"
syn match keraFloat "\<\d[0-9_]*[eE][+-]\=\d[0-9_]*\%(f32\|f64\)\=\>"

syn match keraEscape "\\\%([nrt0\\\"']\|u{\x\{1,6}}\)" contained
syn match keraBadEscape "\\[^nrt0\\\"'u]" contained
syn region keraString start=+"+ skip=+\\\\\|\\"+ end=+"+ end=+$+ contains=keraEscape,keraBadEscape

syn keyword keraTodo TODO FIXME XXX NOTE contained
syn match keraLineComment "//.*$" contains=keraTodo,@Spell
syn match keraDocComment "///\%(/\)\@!.*$" contains=keraTodo,@Spell
syn region keraBlockComment start="/\*" end="\*/" contains=keraBlockComment,keraTodo,@Spell

hi def link keraConditional Conditional
hi def link keraRepeat Repeat
hi def link keraStatement Statement
hi def link keraKeyword Keyword
hi def link keraModifier StorageClass
hi def link keraInclude Include
hi def link keraOperatorWord Operator
hi def link keraBoolean Boolean
hi def link keraType Type
hi def link keraStructType Type
hi def link keraBuiltin Special
hi def link keraDefName Function
hi def link keraFunctionCall Function
hi def link keraConstant Constant
hi def link keraMemorySpace PreProc
hi def link keraEffects PreProc
hi def link keraEffectBang Operator
hi def link keraNumber Number
hi def link keraFloat Float
hi def link keraString String
hi def link keraEscape SpecialChar
hi def link keraBadEscape Error
hi def link keraTodo Todo
hi def link keraLineComment Comment
hi def link keraDocComment SpecialComment
hi def link keraBlockComment Comment

let b:current_syntax = "kera"
