/*
 * External scanner for tree-sitter-kera.
 *
 * It lexes the tokens whose rules a tree-sitter regular expression cannot state, or cannot
 * state the way kera_core's lexer (kera_core/syntax/lexer.py) does:
 *
 *   - block comments, which nest: a `/` `*` inside a block comment opens another level, and the
 *     comment ends at the matching `*` `/`;
 *   - string contents between escapes (so comments and whitespace inside a string stay text);
 *   - keywords, which are reserved everywhere: a keyword is always returned as the keyword
 *     token, so `let if = 1;` is an error as in the core parser (tree-sitter would otherwise
 *     read a keyword as an identifier wherever the keyword itself is not expected);
 *   - integer and float literals: one maximal token exactly as the core lexer splits them,
 *     then validated against the literal grammar (docs/language.md §2.6-2.7); an invalid
 *     literal such as `12abc` or `0b102` becomes `_invalid_token`, which no rule accepts;
 *   - `&&`, always one token (maximal munch), so `&&x` and `&&T` are errors.
 *
 * The scanner keeps no state between tokens.
 */

#include "tree_sitter/parser.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

enum TokenType {
  BLOCK_COMMENT,
  STRING_CONTENT,
  INTEGER_LITERAL,
  FLOAT_LITERAL,
  INVALID_TOKEN,
  ERROR_SENTINEL,
  AMP_AMP,
  KW_AS,
  KW_BREAK,
  KW_CONST,
  KW_CONTINUE,
  KW_ELSE,
  KW_FALSE,
  KW_FN,
  KW_FOR,
  KW_IF,
  KW_IN,
  KW_LET,
  KW_MUT,
  KW_PUB,
  KW_RETURN,
  KW_STRUCT,
  KW_TRUE,
  KW_USE,
  KW_WHILE,
  KW_LOOP,
  KW_MATCH,
};

static const char *const KEYWORDS[] = {
  "as", "break", "const", "continue", "else", "false", "fn", "for", "if",
  "in", "let", "mut", "pub", "return", "struct", "true", "use", "while",
  "loop", "match",
};

#define KEYWORD_COUNT (sizeof(KEYWORDS) / sizeof(KEYWORDS[0]))
#define MAX_KEYWORD_LEN 8
/* Longer number literals are still one token; only their first bytes are validated. */
#define NUMBER_BUF 512

static inline bool is_digit(int32_t c) { return c >= '0' && c <= '9'; }
static inline bool is_alpha(int32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static inline bool is_word(int32_t c) { return is_alpha(c) || is_digit(c) || c == '_'; }
static inline bool is_hex(int32_t c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static inline bool is_oct(int32_t c) { return c >= '0' && c <= '7'; }
static inline bool is_bin(int32_t c) { return c == '0' || c == '1'; }
static inline bool is_space(int32_t c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

void *tree_sitter_kera_external_scanner_create(void) { return NULL; }
void tree_sitter_kera_external_scanner_destroy(void *payload) { (void)payload; }
unsigned tree_sitter_kera_external_scanner_serialize(void *payload, char *buffer) {
  (void)payload;
  (void)buffer;
  return 0;
}
void tree_sitter_kera_external_scanner_deserialize(void *payload, const char *buffer,
                                                   unsigned length) {
  (void)payload;
  (void)buffer;
  (void)length;
}

/* --- number literals ------------------------------------------------------------------ */

typedef struct {
  char text[NUMBER_BUF];
  size_t len;
} Buffer;

static void take(TSLexer *lexer, Buffer *buf) {
  if (buf->len < NUMBER_BUF) buf->text[buf->len++] = (char)lexer->lookahead;
  lexer->advance(lexer, false);
}

static void push(Buffer *buf, char c) {
  if (buf->len < NUMBER_BUF) buf->text[buf->len++] = c;
}

static bool is_suffix(const char *s, size_t n, bool int_suffixes) {
  static const char *const INT_SUFFIXES[] = {"i8",  "i16", "i32", "i64", "u8",
                                             "u16", "u32", "u64", "f32", "f64"};
  size_t first = int_suffixes ? 0 : 8; /* floats take only f32 / f64 */
  if (n == 0) return true;
  for (size_t i = first; i < 10; i++) {
    if (strlen(INT_SUFFIXES[i]) == n && memcmp(INT_SUFFIXES[i], s, n) == 0) return true;
  }
  return false;
}

/* digits { digits | "_" } [ IntSuffix ], the digits after a base prefix. */
static bool valid_int_body(const char *s, size_t n, bool (*digit)(int32_t)) {
  if (n == 0 || !digit((unsigned char)s[0])) return false;
  size_t i = 1;
  while (i < n && (digit((unsigned char)s[i]) || s[i] == '_')) i++;
  return is_suffix(s + i, n - i, true);
}

static bool is_digit_fn(int32_t c) { return is_digit(c); }
static bool is_hex_fn(int32_t c) { return is_hex(c); }
static bool is_oct_fn(int32_t c) { return is_oct(c); }
static bool is_bin_fn(int32_t c) { return is_bin(c); }

/* kera_core's _VALID_INT: (0x… | 0o… | 0b… | decimal) [suffix], alternatives in order. */
static bool valid_int(const char *s, size_t n) {
  if (n >= 2 && s[0] == '0') {
    if (s[1] == 'x' && valid_int_body(s + 2, n - 2, is_hex_fn)) return true;
    if (s[1] == 'o' && valid_int_body(s + 2, n - 2, is_oct_fn)) return true;
    if (s[1] == 'b' && valid_int_body(s + 2, n - 2, is_bin_fn)) return true;
  }
  return valid_int_body(s, n, is_digit_fn);
}

/* kera_core's _VALID_FLOAT: d{d|_} [. d{d|_}] [(e|E) [+|-] d{d|_}] [f32|f64]. */
static bool valid_float(const char *s, size_t n) {
  size_t i = 0;
  if (i >= n || !is_digit((unsigned char)s[i])) return false;
  while (i < n && (is_digit((unsigned char)s[i]) || s[i] == '_')) i++;
  if (i < n && s[i] == '.') {
    i++;
    if (i >= n || !is_digit((unsigned char)s[i])) return false;
    while (i < n && (is_digit((unsigned char)s[i]) || s[i] == '_')) i++;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    if (i >= n || !is_digit((unsigned char)s[i])) return false;
    while (i < n && (is_digit((unsigned char)s[i]) || s[i] == '_')) i++;
  }
  return is_suffix(s + i, n - i, false);
}

static void take_word_chars(TSLexer *lexer, Buffer *buf) {
  while (is_word(lexer->lookahead)) take(lexer, buf);
}

/*
 * The token the core lexer's _TOKEN_RE takes at a digit, alternatives tried in order:
 *   float: d{d|_} . d{d|_} [(e|E) [+|-] {d|_}+] {alnum|_}
 *        | d{d|_} (e|E) [+|-] d {d|_} {alnum|_}
 *   int:   d {alnum|_}
 */
static bool scan_number(TSLexer *lexer) {
  Buffer buf = {.len = 0};
  bool is_float = false;

  take(lexer, &buf);
  while (is_digit(lexer->lookahead) || lexer->lookahead == '_') take(lexer, &buf);
  lexer->mark_end(lexer);

  if (lexer->lookahead == '.') {
    lexer->advance(lexer, false);
    if (is_digit(lexer->lookahead)) {
      is_float = true;
      push(&buf, '.');
      while (is_digit(lexer->lookahead) || lexer->lookahead == '_') take(lexer, &buf);
      lexer->mark_end(lexer);
      if (lexer->lookahead == 'e' || lexer->lookahead == 'E') {
        take(lexer, &buf);
        lexer->mark_end(lexer);
        if (lexer->lookahead == '+' || lexer->lookahead == '-') {
          char sign = (char)lexer->lookahead;
          lexer->advance(lexer, false);
          if (!(is_digit(lexer->lookahead) || lexer->lookahead == '_')) goto done;
          push(&buf, sign);
        }
      }
      take_word_chars(lexer, &buf);
      lexer->mark_end(lexer);
    }
    /* else: an integer followed by `.` or `..`; the token ended before the dot */
  } else if (lexer->lookahead == 'e' || lexer->lookahead == 'E') {
    take(lexer, &buf);
    lexer->mark_end(lexer);
    if (lexer->lookahead == '+' || lexer->lookahead == '-') {
      char sign = (char)lexer->lookahead;
      lexer->advance(lexer, false);
      if (!is_digit(lexer->lookahead)) goto done; /* the integer token `De` */
      push(&buf, sign);
      is_float = true;
    } else if (is_digit(lexer->lookahead)) {
      is_float = true;
    }
    take_word_chars(lexer, &buf);
    lexer->mark_end(lexer);
  } else {
    take_word_chars(lexer, &buf);
    lexer->mark_end(lexer);
  }

done:
  if (buf.len >= NUMBER_BUF) {
    lexer->result_symbol = is_float ? FLOAT_LITERAL : INTEGER_LITERAL;
  } else if (is_float) {
    lexer->result_symbol = valid_float(buf.text, buf.len) ? FLOAT_LITERAL : INVALID_TOKEN;
  } else {
    lexer->result_symbol = valid_int(buf.text, buf.len) ? INTEGER_LITERAL : INVALID_TOKEN;
  }
  return true;
}

/* --- block comments ------------------------------------------------------------------- */

/* After `/` with `*` as lookahead: the rest of a nested block comment. */
static bool scan_block_comment(TSLexer *lexer) {
  unsigned depth = 1;
  lexer->advance(lexer, false); /* * */
  while (!lexer->eof(lexer)) {
    if (lexer->lookahead == '*') {
      lexer->advance(lexer, false);
      if (lexer->lookahead == '/') {
        lexer->advance(lexer, false);
        if (--depth == 0) {
          lexer->mark_end(lexer);
          lexer->result_symbol = BLOCK_COMMENT;
          return true;
        }
      }
    } else if (lexer->lookahead == '/') {
      lexer->advance(lexer, false);
      if (lexer->lookahead == '*') {
        lexer->advance(lexer, false);
        depth++;
      }
    } else {
      lexer->advance(lexer, false);
    }
  }
  return false; /* unterminated: an error, as in the core lexer (K0004) */
}

/* --- entry point ---------------------------------------------------------------------- */

bool tree_sitter_kera_external_scanner_scan(void *payload, TSLexer *lexer,
                                            const bool *valid_symbols) {
  (void)payload;
  /* During error recovery every symbol is valid; string contents are then not scanned. */
  bool recovering = valid_symbols[ERROR_SENTINEL];

  if (valid_symbols[STRING_CONTENT] && !recovering) {
    bool has_content = false;
    while (!lexer->eof(lexer) && lexer->lookahead != '"' && lexer->lookahead != '\\' &&
           lexer->lookahead != '\n') {
      lexer->advance(lexer, false);
      has_content = true;
    }
    if (!has_content) return false;
    lexer->mark_end(lexer);
    lexer->result_symbol = STRING_CONTENT;
    return true;
  }

  while (is_space(lexer->lookahead)) lexer->advance(lexer, true);

  int32_t c = lexer->lookahead;
  if (c == '/') {
    lexer->advance(lexer, false);
    if (lexer->lookahead == '*') return scan_block_comment(lexer);
    return false; /* `/`, `/=`, `//`, `///`: the internal lexer */
  }

  if (is_digit(c)) return scan_number(lexer);

  if (c == '&') {
    lexer->advance(lexer, false);
    if (lexer->lookahead != '&') return false;
    lexer->advance(lexer, false);
    lexer->mark_end(lexer);
    lexer->result_symbol = AMP_AMP;
    return true;
  }

  if (is_alpha(c) || c == '_') {
    char word[MAX_KEYWORD_LEN + 1];
    size_t len = 0;
    while (is_word(lexer->lookahead)) {
      if (len > MAX_KEYWORD_LEN) return false; /* too long for a keyword: an identifier */
      word[len++] = (char)lexer->lookahead;
      lexer->advance(lexer, false);
    }
    for (size_t i = 0; i < KEYWORD_COUNT; i++) {
      if (strlen(KEYWORDS[i]) == len && memcmp(KEYWORDS[i], word, len) == 0) {
        lexer->mark_end(lexer);
        lexer->result_symbol = (enum TokenType)(KW_AS + i);
        return true;
      }
    }
    return false; /* an identifier or a primitive type name: the internal lexer */
  }

  return false;
}
