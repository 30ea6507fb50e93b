#!/usr/bin/python3
"""The kernels hold no mutable state that outlives a call (docs/architecture.md): whatever changes
what they compute is a parameter the caller passes. This check fails on every variable in a .h or
.cpp under src/kernels/ that is not const and lives for the whole program or thread:

  - a variable at namespace scope (a global, one in an anonymous namespace, std::atomic included);
  - a static data member of a class;
  - a function-local static or thread_local.

Allowed: const and constexpr ones (a `static const` computed once is fine), and memoisation that
cannot change what is computed (a primitive cache, per-thread scratch), each tagged on its line
with `// memo: <why it cannot change results>`; the reason is required, and a tag on a line that
holds no such variable is an error too, so tags cannot outlive their variable.

usage: check_kernel_state.py SRC_DIR   (exit 1 listing every finding under SRC_DIR/kernels)
       check_kernel_state.py --selftest
"""
import os
import re
import sys

TAG = re.compile(r"//\s*memo:(.*)$")
MIN_REASON_WORDS = 3
CLASS_KEYS = {"class", "struct", "union"}
# Statements at namespace or class scope that declare no variable.
NOT_DECLARATIONS = {"using", "typedef", "static_assert", "namespace", "friend", "template", "asm", "__asm__"}
# Words that may end a function head before its body: `int f() const noexcept {`.
FUNCTION_TAIL = {"const", "noexcept", "override", "final", "volatile", "mutable", "requires", "try"}

TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<raw>R"(?P<delim>[^(\s]*)\(.*?\)(?P=delim)")
  | (?P<string>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<number>\.?[0-9](?:[0-9a-zA-Z_.']|[eEpP][+-])*)
  | (?P<word>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<punct>::|->|&&|\|\||[-+*/%^&|<>!=]=|<<=|\+\+|--|.)
""", re.VERBOSE | re.DOTALL)


def tokens(text):
    """(token, line) pairs of the code: comments, preprocessor lines and literals' contents dropped
    (a literal stays as one token, '""', so an initializer still has a value)."""
    code = []
    for line in text.split("\n"):  # preprocessor lines (and their continuations) blanked
        if code and code[-1].endswith("\\") and code[-1].lstrip().startswith("#"):
            code.append("#" + line)
        else:
            code.append(line)
    text = "\n".join("" if l.lstrip().startswith("#") else l for l in code)
    out, line = [], 1
    for m in TOKEN.finditer(text):
        kind, value = m.lastgroup, m.group()
        if kind in ("word", "number", "punct"):
            out.append((value, line))
        elif kind in ("string", "raw"):
            out.append(('""', line))
        line += value.count("\n")
    # `>>` closes two template argument lists in a declaration; expressions are not parsed.
    return [(t, n) for value, n in out for t in ([">", ">"] if value == ">>" else [value])]


def strip_decorations(head):
    """The head without leading template parameter lists, attributes, alignas(...),
    __attribute__((...)) and access specifiers (public:)."""
    out, i = [], 0
    while i < len(head):
        t = head[i]
        if t == "template" and i + 1 < len(head) and head[i + 1] == "<" and not out:
            i = skip_group(head, i + 1, "<", ">")
        elif t == "[" and i + 1 < len(head) and head[i + 1] == "[":
            i = skip_group(head, i, "[", "]")
        elif t in ("alignas", "__attribute__", "__declspec") and i + 1 < len(head) and head[i + 1] == "(":
            i = skip_group(head, i + 1, "(", ")")
        elif t in ("public", "private", "protected") and i + 1 < len(head) and head[i + 1] == ":":
            i += 2
        else:
            out.append(t)
            i += 1
    return out


def skip_group(seq, i, open_, close):
    """Index after the group opened by seq[i]."""
    depth = 0
    while i < len(seq):
        depth += seq[i] == open_
        depth -= seq[i] == close
        i += 1
        if depth == 0:
            break
    return i


def top_level(seq):
    """(index, token) of the tokens outside (), [], {} and <> groups."""
    depth = 0
    for i, t in enumerate(seq):
        if t in ")]}>" and depth > 0:
            depth -= 1
            continue
        if depth == 0:
            yield i, t
        if t in "([{<":
            depth += 1


def declares_variable(head):
    """Whether a statement (its tokens up to ';', decorations stripped) declares a variable."""
    if not head or head[0] in NOT_DECLARATIONS or "operator" in head:
        return False
    if head[0] == "extern" and len(head) > 1 and head[1] == "template":
        return False
    first_paren = None
    for i, t in top_level(head):
        if t == "=":
            # An initialiser (a default argument would sit inside the parentheses), unless a
            # special member is defaulted or deleted, or a virtual one is pure.
            return first_paren is None or head[i + 1:] not in (["default"], ["delete"], ["0"])
        if t == "(" and first_paren is None:
            first_paren = i
    keys = [i for i, t in top_level(head) if t in CLASS_KEYS or t == "enum"]
    if keys and "{}" not in head:
        # `struct X;` and `enum class E : int;` declare a type; `struct X x;` a variable of it.
        rest = head[keys[0] + 1:]
        rest = rest[:rest.index(":")] if ":" in rest else rest
        words = [t for t in rest if re.match(r"[A-Za-z_]", t) and t not in ("class", "struct")]
        return len(words) >= 2 and first_paren is None
    if keys:  # `struct {...} x;` declares x; `struct X {...};` only the type
        after = head[head.index("{}") + 1:]
        return any(re.match(r"[A-Za-z_]", t) for t in after)
    if first_paren is None:
        return True
    inner = head[first_paren + 1:]
    # `void (*hook)(int);` is a pointer; `Table t("name", 3);` an object made from arguments;
    # anything else with a parameter list is a function.
    return bool(inner) and (inner[0] in ("*", "&", "^") or inner[0] == '""' or inner[0][0].isdigit() or
                            inner[0] in ("true", "false", "nullptr", "-", "{"))


def plain_type(head):
    """The declaration with a class or enum type written in it (`struct {...} x`, `enum E x`) as
    one type name, so its declarator reads like any other's."""
    keys = [i for i, t in top_level(head) if t in CLASS_KEYS or t == "enum"]
    if not keys:
        return head
    k = keys[0]
    rest = head[k + 1:]
    if "{}" in rest:
        return head[:k] + ["type"] + rest[rest.index("{}") + 1:]
    return head[:k] + rest[1:] if rest[:1] == ["class"] else head[:k] + rest


def is_const(head):
    """Whether the variable a declaration names cannot change: constexpr, or const applying to the
    object itself (`const char* p` is a mutable pointer; `const char* const p` is not)."""
    if "constexpr" in head:
        return True
    # The declarator ends where its initialiser, array bound or parameter list starts.
    end = len(head)
    for i, t in top_level(head):
        if t in ("=", "{}", "[", ",") or (t == "(" and i > 0):
            end = i
            break
    spec = head[:end]
    if spec and spec[-1] == ")" and "(" in spec:  # `void (*const hook)(int)`
        inner = spec[spec.index("(") + 1:]
        return "const" in inner
    ptr = [i for i, t in top_level(spec) if t in ("*", "&", "&&")]
    if ptr and spec[ptr[-1]] in ("&", "&&"):
        return True  # a reference cannot be rebound; what it names is checked where it is defined
    after = spec[ptr[-1] + 1:] if ptr else spec
    return any(t == "const" for _, t in top_level(after))


def declared_name(head):
    """The declarator's name, for the message."""
    end = len(head)
    for i, t in top_level(head):
        if t in ("=", "{}", "[", ",") or (t == "(" and i > 0 and head[i - 1] != "("):
            end = i
            break
    words = [t for t in head[:end] if re.match(r"[A-Za-z_]", t)]
    return words[-1] if words else "?"


class Finding:
    def __init__(self, lines, what, name):
        self.lines, self.what, self.name = lines, what, name


class Scanner:
    """Finds every static-storage variable that is not const: at namespace scope, static data
    members, and statics or thread_locals inside function bodies."""

    def __init__(self, toks):
        self.toks, self.found = toks, []

    def record(self, decl, what):
        head = strip_decorations([t for t, _ in decl])
        if declares_variable(head) and not is_const(plain_type(head)):
            self.found.append(Finding(sorted({n for _, n in decl}), what, declared_name(plain_type(head))))

    def skip_braces(self, i):
        """Index after the {...} group opening at i."""
        return skip_group([t for t, _ in self.toks], i, "{", "}")

    def scope(self, i, kind):
        """Reads a namespace (or the file) or a class body from i to its closing brace; returns
        the index after it."""
        stmt = []
        while i < len(self.toks):
            t, line = self.toks[i]
            if t == "}":
                return i + 1
            if t == ";":
                head = strip_decorations([tok for tok, _ in stmt])
                if kind == "namespace":
                    self.record(stmt, "namespace-scope variable")
                elif "static" in head or "thread_local" in head:
                    self.record(stmt, "static data member")
                stmt, i = [], i + 1
            elif t == "{":
                head = [tok for tok, _ in stmt]
                inside = head.count("(") > head.count(")")  # a default argument: `int f(V v = {})`
                opened = "other" if inside else open_kind(strip_decorations(head))
                if opened == "namespace":
                    i, stmt = self.scope(i + 1, "namespace"), []
                elif opened == "class":  # `struct {...} x;` goes on to its declarators
                    i = self.scope(i + 1, "class")
                    stmt.append(("{}", line))
                elif opened == "function":
                    i, stmt = self.body(i), []
                else:  # an enum's enumerators or a variable's braced initialiser
                    i = self.skip_braces(i)
                    stmt.append(("{}", line))
            else:
                stmt.append((t, line))
                i += 1
        return i

    def body(self, i):
        """Reads a function body opening at i; returns the index after it."""
        depth = 0
        while i < len(self.toks):
            t = self.toks[i][0]
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
                if depth == 0:
                    return i + 1
            elif t in ("static", "thread_local"):
                j = i
                while j < len(self.toks) and self.toks[j][0] not in (";", "{", "}"):
                    j += 1
                if j < len(self.toks) and self.toks[j][0] == "{":  # a braced initialiser, or a body
                    head = strip_decorations([tok for tok, _ in self.toks[i:j]])
                    if "=" not in head and "(" in head:
                        i += 1  # a local class's static member function: its body is read on
                        continue
                    j = self.skip_braces(j)
                    while j < len(self.toks) and self.toks[j][0] != ";":
                        j = self.skip_braces(j) if self.toks[j][0] == "{" else j + 1
                decl = collapse_braces(self.toks[i:j])
                self.record(decl, "function-local " + t)
                i = j
                continue
            i += 1
        return i


def open_kind(head):
    """What a '{' after this head opens: namespace, class, function, or other (an enum's list or
    an initialiser)."""
    if head[:1] == ["namespace"] or head[:2] == ["inline", "namespace"] or head[:2] == ["extern", '""']:
        return "namespace"
    if any(t == "=" for _, t in top_level(head)):
        return "other"
    keys = [t for _, t in top_level(head) if t in CLASS_KEYS or t == "enum"]
    if keys and "(" not in [t for _, t in top_level(head)]:
        return "other" if "enum" in keys else "class"
    level = [t for _, t in top_level(head)]
    if "(" in level and ":" in level[level.index("("):] and re.match(r"[A-Za-z_>]", head[-1]):
        return "other"  # a member's braced initialiser in a constructor's list: `: n_{0} {`
    if "operator" in head or "(" in level or (head and head[-1] in FUNCTION_TAIL):
        return "function"
    return "other"  # `std::atomic<int> n{0}`


def collapse_braces(decl):
    """A declaration with each outermost {...} group replaced by one '{}' token."""
    out, depth = [], 0
    for tok, n in decl:
        if tok == "{":
            if depth == 0:
                out.append(("{}", n))
            depth += 1
        elif tok == "}":
            depth -= 1
        elif depth == 0:
            out.append((tok, n))
    return out


def check_file(path, shown):
    """Messages for one file: untagged mutable state, tags without a reason or without state."""
    text = open(path, encoding="utf-8").read()
    lines = text.split("\n")
    scanner = Scanner(tokens(text))
    end = scanner.scope(0, "namespace")
    if end < len(scanner.toks):
        return [f"{shown}:{scanner.toks[end - 1][1]}: unbalanced braces; this check cannot read the file"]
    bad, used = [], set()
    for f in scanner.found:
        tagged = [n for n in f.lines if TAG.search(lines[n - 1])]
        used.update(tagged)
        if not tagged:
            bad.append(f"{shown}:{f.lines[0]}: {f.what} '{f.name}' is mutable state: make it const, pass it "
                       f"from the caller, or, if it only memoises, tag its line `// memo: <why it cannot "
                       f"change results>`")
    for n, text_line in enumerate(lines, 1):
        m = TAG.search(text_line)
        if not m:
            continue
        if n not in used:
            bad.append(f"{shown}:{n}: a memo tag on a line with no mutable state: remove it")
        elif len(m.group(1).split()) < MIN_REASON_WORDS:
            bad.append(f"{shown}:{n}: the memo tag gives no reason: say why the state cannot change what "
                       f"is computed (`// memo: <reason>`, {MIN_REASON_WORDS} words at least)")
    return bad


def check_tree(src):
    bad = []
    for root, _, files in sorted(os.walk(os.path.join(src, "kernels"))):
        for name in sorted(files):
            if name.endswith((".h", ".cpp")):
                path = os.path.join(root, name)
                bad += check_file(path, os.path.relpath(path, src))
    return bad


# Each must be flagged on its own, in a file that is otherwise clean, with what the message names.
SELFTEST_BAD = {
    "a global": ("int g_calls = 0;\n", "'g_calls'"),
    "an anonymous namespace's atomic": ("namespace {\nstd::atomic<int> g_terms{2};\n}\n", "'g_terms'"),
    "a pointer to const": ("const char* g_name = \"x\";\n", "'g_name'"),
    "a function-local static": ("int next() {\n  static int n = 0;\n  return ++n;\n}\n", "'n'"),
    "a local thread_local": ("float* buf() {\n  thread_local std::vector<float> v;\n  return v.data();\n}\n",
                             "'v'"),
    "a static data member": ("struct Stats {\n  static long hits;\n};\n", "'hits'"),
    "a variable of a declared struct": ("struct Plan g_plan;\n", "'g_plan'"),
    "a struct's variable": ("struct {\n  int n;\n} g_counts;\n", "'g_counts'"),
    "an enum's variable": ("enum class Side { left, right } g_side = Side::left;\n", "'g_side'"),
    "an untagged cache": ("Cache& cache2() {\n  static Cache c2;\n  return c2;\n}\n", "'c2'"),
    "a tag without its reason": ("Cache& cache2() {\n  static Cache c2;  // memo:\n  return c2;\n}\n",
                                 "gives no reason"),
    "a tag without state": ("int twice(int x) { return 2 * x; }  // memo: pure arithmetic, nothing kept\n",
                            "no mutable state"),
}
# None of these may be flagged.
SELFTEST_CLEAN = """#include <atomic>
namespace ff {
namespace {
constexpr int kTile = 64;
const double kScale = 0.5;
const char* const kName = "tile";
static constexpr float kEps[2] = {1e-6f, 1e-5f};
using Table = std::array<int, 4>;
struct Shape {
  int rows, cols;
  static constexpr int kMax = 8;
  static const int kMin;
  static Shape square(int n) { return {n, n}; }
  int area() const { return rows * cols; }
  Shape() = default;
  Shape(const Shape&) = delete;
  virtual ~Shape() = 0;
};
struct Plan;
enum class Opaque : int;
Shape::~Shape() = default;
struct Counter {
  Counter();
  long n_, m_;
};
Counter::Counter() : n_{0}, m_(1) {}
const int kAfterConstructor = 3;
enum class Mode { a, b };
const struct Limits {
  int lo, hi;
} kLimits{0, 9};
template <class T>
T twice(T x) { return x + x; }
}  // namespace
int kernel(int n);
int pick(const std::vector<int>& from = {}, int n = 2);
double forward(float* out, const float* in, const Shape& s);
Cache& cache() {
  static Cache c;  // memo: primitives keyed by shape compute what a fresh one would
  return c;
}
int path() {
  static const int p = [] { return detect(); }();
  std::atomic<bool> failed{false};
  auto f = [&](int i) { return i + 1; };
  return p + f(1);
}
}  // namespace ff
"""


def selftest():
    """The check must pass the allowed forms and fail on each forbidden one, naming it."""
    import subprocess
    import tempfile
    failures = []
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "kernels"))
        path = os.path.join(d, "kernels", "k.cpp")
        open(path, "w").write(SELFTEST_CLEAN)
        clean = subprocess.run([sys.executable, __file__, d], capture_output=True, text=True)
        if clean.returncode != 0:
            failures.append(f"the allowed forms were flagged: {clean.stdout}")
        for what, (code, named) in SELFTEST_BAD.items():
            open(path, "w").write(SELFTEST_CLEAN + code)
            dirty = subprocess.run([sys.executable, __file__, d], capture_output=True, text=True)
            if dirty.returncode != 1 or len(dirty.stdout.splitlines()) != 1 or named not in dirty.stdout:
                failures.append(f"{what}: exit {dirty.returncode}, want 1 and one line with {named}: {dirty.stdout}")
    print("selftest " + ("passed" if not failures else "FAILED:\n" + "\n".join(failures)))
    sys.exit(0 if not failures else 1)


def main():
    if sys.argv[1] == "--selftest":
        selftest()
    bad = check_tree(sys.argv[1])
    print("\n".join(bad) if bad else "the kernels hold no mutable state")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
