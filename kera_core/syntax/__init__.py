"""The lossless front end: lexer, event parser, green/red tree, typed AST, reparsing."""
