"""Stable diagnostic codes. A code, once published, keeps its meaning forever.

Ranges: K00xx lexical, K01xx syntax, K02xx names, K03xx types and shapes,
K04xx ownership and memory spaces, K05xx effects, K06xx formatting, K09xx tool errors.
"""

CODES: dict[str, str] = {
    # lexical
    "K0001": "invalid UTF-8 byte",
    "K0002": "unexpected character",
    "K0003": "unterminated string literal",
    "K0004": "unterminated block comment",
    "K0005": "invalid number literal",
    "K0006": "invalid escape in string literal",
    # syntax
    "K0100": "expected a token",
    "K0101": "expected an item",
    "K0102": "expected an expression",
    "K0103": "expected a type",
    "K0104": "unexpected token",
    "K0105": "comparison operators cannot be chained",
    "K0106": "unclosed delimiter",
    "K0107": "unmatched closing delimiter",
    "K0108": "file too deeply nested",
    "K0109": "parser step limit reached",
    "K0110": "doc comment not attached to an item",
    "K0111": "range operators cannot be chained",
    "K0112": "a construct Kera does not have (yet)",
    # names
    "K0201": "unknown name",
    "K0202": "duplicate definition",
    "K0203": "unknown type",
    "K0204": "unknown field",
    "K0205": "unknown function",
    "K0206": "duplicate parameter",
    "K0207": "function replaces a builtin",
    "K0208": "unknown bound",
    # types and shapes
    "K0301": "mismatched types",
    "K0302": "shape mismatch",
    "K0303": "wrong number of arguments",
    "K0304": "wrong number of indices",
    "K0305": "cannot broadcast shapes",
    "K0306": "matmul inner dimensions differ",
    "K0307": "literal out of range",
    "K0308": "invalid operand type",
    "K0309": "return type mismatch",
    "K0310": "symbolic dimension conflict",
    "K0311": "not assignable",
    "K0312": "missing struct field",
    "K0313": "invalid cast",
    "K0314": "break or continue outside a loop",
    "K0315": "unsupported construct",
    "K0316": "invalid axis",
    "K0317": "constant evaluation fails",
    "K0318": "type argument outside its bound",
    "K0319": "type parameter not bound by the parameters",
    "K0320": "pattern does not match the value",
    # ownership and memory spaces
    "K0401": "use after move",
    "K0402": "conflicting borrows",
    "K0403": "assignment to borrowed value",
    "K0404": "borrow outlives its owner",
    "K0405": "mutation of an immutable value",
    "K0406": "memory space mismatch",
    "K0407": "borrow across memory spaces",
    "K0408": "move out of a borrow",
    # effects
    "K0501": "effect not declared",
    "K0502": "unknown effect",
    "K0503": "duplicate effect",
    # formatting
    "K0601": "formatter refused: comments would change",
    "K0602": "formatter refused: syntax errors",
    "K0603": "file is not formatted",
    # tool
    "K0901": "internal error",
    "K0902": "analysis skipped: file too large",
}
