"""Definitions that language servers list and the outline missed, misnamed or listed over and over, each on an
excerpt of a well-known project (named above it, copied as it is there) and on the smallest case: Go's grouped
`var ( ... )` and `const ( ... )`, the names a JavaScript or TypeScript destructuring binds, TypeScript
overloads, methods defined by assignment, Python's chained assignments and the names bound in an `if`, `try` or
`with` of the module. Through outline, and find_symbol with Python's definition prefilter and without."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("ast_grep_py")

from shipcode_mcp.context import Context
from shipcode_mcp.workspace.code.navigate import find_symbol
from shipcode_mcp.workspace.code.outline import outline_source
from shipcode_mcp.workspace.code.source import CACHE, CPP_HEADER, read_source
from shipcode_mcp.workspace.code.symbols import walk
from shipcode_mcp.workspace.roots import Roots
from support import REPO, fetched_corpora, load_script
from workspace_support import Tools

# Go's standard library, src/os/file.go (golang/go at 008e96c), its declarations up to the Seek constants.
GO_OS_FILE = """package os

import (
\t"io"
\t"syscall"
)

// Name returns the name of the file as presented to Open.
func (f *File) Name() string { return f.name }

// Stdin, Stdout, and Stderr are open Files pointing to the standard input,
// standard output, and standard error file descriptors.
var (
\tStdin  = NewFile(uintptr(syscall.Stdin), "/dev/stdin")
\tStdout = NewFile(uintptr(syscall.Stdout), "/dev/stdout")
\tStderr = NewFile(uintptr(syscall.Stderr), "/dev/stderr")
)

// Flags to OpenFile wrapping those of the underlying system. Not all
// flags may be implemented on a given system.
const (
\tO_RDONLY int = syscall.O_RDONLY // open the file read-only.
\tO_WRONLY int = syscall.O_WRONLY // open the file write-only.
\tO_RDWR   int = syscall.O_RDWR   // open the file read-write.
\tO_APPEND int = syscall.O_APPEND // append data to the file when writing.
\tO_CREATE int = syscall.O_CREAT  // create a new file if none exists.
\tO_EXCL   int = syscall.O_EXCL   // used with O_CREATE, file must not exist
\tO_SYNC   int = syscall.O_SYNC   // open for synchronous I/O.
\tO_TRUNC  int = syscall.O_TRUNC  // if possible, truncate file when opened.
)

// Seek whence values.
const (
\tSEEK_SET int = 0 // seek relative to the origin of the file
\tSEEK_CUR int = 1 // seek relative to the current offset
\tSEEK_END int = 2 // seek relative to the end
)
"""
# Go's standard library, src/io/io.go (golang/go at 01360a6): the Seek constants and ReadAtLeast, whose
# `var nn int` is a local.
GO_IO = """package io

// Seek whence values.
const (
\tSeekStart   = 0 // seek relative to the origin of the file
\tSeekCurrent = 1 // seek relative to the current offset
\tSeekEnd     = 2 // seek relative to the end
)

// ErrShortWrite means that a write accepted fewer bytes than requested
// but failed to return an explicit error.
var ErrShortWrite = errors.New("short write")

func ReadAtLeast(r Reader, buf []byte, min int) (n int, err error) {
\tif len(buf) < min {
\t\treturn 0, ErrShortBuffer
\t}
\tfor n < min && err == nil {
\t\tvar nn int
\t\tnn, err = r.Read(buf[n:])
\t\tn += nn
\t}
\tif n >= min {
\t\terr = nil
\t} else if n > 0 && err == EOF {
\t\terr = ErrUnexpectedEOF
\t}
\treturn
}
"""
# axios 1.21.1, lib/utils.js, lines 1-9 and 464-469; lib/adapters/http.js, line 62.
AXIOS = """'use strict';

import bind from './helpers/bind.js';

// utils is a library of generic helper functions non-specific to axios

const { toString } = Object.prototype;
const { getPrototypeOf } = Object;
const { iterator, toStringTag } = Symbol;

const [isReadableStream, isRequest, isResponse, isHeaders] = [
  'ReadableStream',
  'Request',
  'Response',
  'Headers',
].map(kindOfTest);

const { http: httpFollow, https: httpsFollow } = followRedirects;
"""
# rxjs 7.8.2, src/internal/util/argsArgArrayOrObject.ts, whole (`first` and `keys` are locals).
RXJS_ARGS = """const { isArray } = Array;
const { getPrototypeOf, prototype: objectProto, keys: getKeys } = Object;

/**
 * Used in functions where either a list of arguments, a single array of arguments, or a
 * dictionary of arguments can be returned. Returns an object with an `args` property with
 * the arguments in an array, if it is a dictionary, it will also return the `keys` in another
 * property.
 */
export function argsArgArrayOrObject<T, O extends Record<string, T>>(args: T[] | [O] | [T[]]): { args: T[]; keys: string[] | null } {
  if (args.length === 1) {
    const first = args[0];
    if (isArray(first)) {
      return { args: first, keys: null };
    }
    if (isPOJO(first)) {
      const keys = getKeys(first);
      return {
        args: keys.map((key) => first[key]),
        keys,
      };
    }
  }

  return { args: args as T[], keys: null };
}

function isPOJO(obj: any): obj is object {
  return obj && typeof obj === 'object' && getPrototypeOf(obj) === objectProto;
}
"""
# rxjs 7.8.2, src/internal/Observable.ts: the class's first line, toPromise's overloads and implementation
# (lines 430-467), and the class's last line; each DEPRECATED stands for the line below (too long for the linter).
DEPRECATED = ("/** @deprecated Replaced with {@link firstValueFrom} and {@link lastValueFrom}. Will be removed in v8. "
              "Details: https://rxjs.dev/deprecations/to-promise */")
RXJS_TO_PROMISE = """export class Observable<T> implements Subscribable<T> {
  /* tslint:disable:max-line-length */
  DEPRECATED
  toPromise(): Promise<T | undefined>;
  DEPRECATED
  toPromise(PromiseCtor: typeof Promise): Promise<T | undefined>;
  DEPRECATED
  toPromise(PromiseCtor: PromiseConstructorLike): Promise<T | undefined>;
  /* tslint:enable:max-line-length */

  /**
   * Subscribe to this Observable and get a Promise resolving on
   * `complete` with the last emission (if any).
   *
   * **WARNING**: Only use this with observables you *know* will complete. If the source
   * observable does not complete, you will end up with a promise that is hung up, and
   * potentially all of the state of an async function hanging out in memory. To avoid
   * this situation, look into adding something like {@link timeout}, {@link take},
   * {@link takeWhile}, or {@link takeUntil} amongst others.
   *
   * @param [promiseCtor] a constructor function used to instantiate
   * the Promise
   * @return A Promise that resolves with the last value emit, or
   * rejects on an error. If there were no emissions, Promise
   * resolves with undefined.
   * @deprecated Replaced with {@link firstValueFrom} and {@link lastValueFrom}. Will be removed in v8. Details: https://rxjs.dev/deprecations/to-promise
   */
  toPromise(promiseCtor?: PromiseConstructorLike): Promise<T | undefined> {
    promiseCtor = getPromiseCtor(promiseCtor);

    return new promiseCtor((resolve, reject) => {
      let value: T | undefined;
      this.subscribe(
        (x: T) => (value = x),
        (err: any) => reject(err),
        () => resolve(value)
      );
    }) as Promise<T | undefined>;
  }
}
""".replace("DEPRECATED", DEPRECATED)
# zod 4.1.12, src/v4/classic/schemas.ts, lines 394-398 (overloads of a function) and 1040-1065 (ZodDate: an
# interface, then the constructor that assigns its methods to `inst`; `c` is a local, minDate a value).
ZOD_STRING = """export function string(params?: string | core.$ZodStringParams): ZodString;
export function string<T extends string>(params?: string | core.$ZodStringParams): core.$ZodType<T, T>;
export function string(params?: string | core.$ZodStringParams): ZodString {
  return core._string(ZodString, params) as any;
}
"""
ZOD_DATE = """export interface _ZodDate<T extends core.$ZodDateInternals = core.$ZodDateInternals> extends _ZodType<T> {
  min(value: number | Date, params?: string | core.$ZodCheckGreaterThanParams): this;
  max(value: number | Date, params?: string | core.$ZodCheckLessThanParams): this;

  /** @deprecated Not recommended. */
  minDate: Date | null;
  /** @deprecated Not recommended. */
  maxDate: Date | null;
}

export interface ZodDate extends _ZodDate<core.$ZodDateInternals<Date>> {}
export const ZodDate: core.$constructor<ZodDate> = /*@__PURE__*/ core.$constructor("ZodDate", (inst, def) => {
  core.$ZodDate.init(inst, def);
  ZodType.init(inst, def);

  inst.min = (value, params) => inst.check(checks.gte(value, params));
  inst.max = (value, params) => inst.check(checks.lte(value, params));

  const c = inst._zod.bag;
  inst.minDate = c.minimum ? new Date(c.minimum) : null;
  inst.maxDate = c.maximum ? new Date(c.maximum) : null;
});

export function date(params?: string | core.$ZodDateParams): ZodDate {
  return core._date(ZodDate, params);
}
"""
# Express 4.22.3, lib/router/index.js, lines 33-62, and lib/view.js, lines 125-136.
EXPRESS = """var toString = Object.prototype.toString;

/**
 * Initialize a new `Router` with the given `options`.
 *
 * @param {Object} [options]
 * @return {Router} which is a callable function
 * @public
 */

var proto = module.exports = function(options) {
  var opts = options || {};

  function router(req, res, next) {
    router.handle(req, res, next);
  }

  // mixin Router class functions
  setPrototypeOf(router, proto)

  router.params = {};
  router._params = [];
  router.caseSensitive = opts.caseSensitive;
  router.mergeParams = opts.mergeParams;
  router.strict = opts.strict;
  router.stack = [];

  return router;
};

/**
 * Render with the given options.
 *
 * @param {object} options
 * @param {function} callback
 * @private
 */

View.prototype.render = function render(options, callback) {
  debug('render "%s"', this.path);
  this.engine(this.path, options, callback);
};
"""
# CPython 3.11.7, Lib/shutil.py, lines 14-40.
SHUTIL = """try:
    import zlib
    del zlib
    _ZLIB_SUPPORTED = True
except ImportError:
    _ZLIB_SUPPORTED = False

try:
    import bz2
    del bz2
    _BZ2_SUPPORTED = True
except ImportError:
    _BZ2_SUPPORTED = False

try:
    import lzma
    del lzma
    _LZMA_SUPPORTED = True
except ImportError:
    _LZMA_SUPPORTED = False

_WINDOWS = os.name == 'nt'
posix = nt = None
if os.name == 'posix':
    import posix
elif _WINDOWS:
    import nt
"""
# CPython 3.11.7, Lib/os.py, lines 52-75 (to the elif's first statements), and Lib/codecs.py, lines 44-50.
OS = """if 'posix' in _names:
    name = 'posix'
    linesep = '\\n'
    from posix import *
    try:
        from posix import _exit
        __all__.append('_exit')
    except ImportError:
        pass
    import posixpath as path

    try:
        from posix import _have_functions
    except ImportError:
        pass

    import posix
    __all__.extend(_get_exports_list(posix))
    del posix

elif 'nt' in _names:
    name = 'nt'
    linesep = '\\r\\n'
    from nt import *
"""
CODECS = """BOM_UTF8 = b'\\xef\\xbb\\xbf'

# UTF-16, little endian
BOM_LE = BOM_UTF16_LE = b'\\xff\\xfe'

# UTF-16, big endian
BOM_BE = BOM_UTF16_BE = b'\\xfe\\xff'
"""
# mypy 2.4.1, mypy/fastparse.py, lines 155-169.
MYPY = """if sys.version_info >= (3, 11):
    TryStar = ast3.TryStar
else:
    TryStar = Any

if sys.version_info >= (3, 12):
    ast_TypeAlias = ast3.TypeAlias
    ast_ParamSpec = ast3.ParamSpec
    ast_TypeVar = ast3.TypeVar
    ast_TypeVarTuple = ast3.TypeVarTuple
else:
    ast_TypeAlias = Any
    ast_ParamSpec = Any
    ast_TypeVar = Any
    ast_TypeVarTuple = Any
"""
# requests 2.32.3 (its sdist, as bench/references_precision.py pins it), setup.py, lines 76-82.
REQUESTS_SETUP = """about = {}
here = os.path.abspath(os.path.dirname(__file__))
with open(os.path.join(here, "src", "requests", "__version__.py"), "r", "utf-8") as f:
    exec(f.read(), about)

with open("README.md", "r", "utf-8") as f:
    readme = f.read()
"""

FILES = {"os_file.go": GO_OS_FILE, "io.go": GO_IO, "utils.js": AXIOS, "argsArgArrayOrObject.ts": RXJS_ARGS,
         "Observable.ts": RXJS_TO_PROMISE, "zod_string.ts": ZOD_STRING, "zod_date.ts": ZOD_DATE,
         "express.js": EXPRESS, "shutil.py": SHUTIL, "os.py": OS, "codecs.py": CODECS, "fastparse.py": MYPY,
         "setup.py": REQUESTS_SETUP}
LANGUAGES = {".go": "go", ".js": "javascript", ".ts": "typescript", ".py": "python"}


def _outline(text: str, language: str) -> list[tuple[str, str, int, int]]:
    return [(s.kind, s.qualified_name, s.line, s.end_line) for s in walk(outline_source(text, language))]


def _file(name: str) -> list[tuple[str, str, int, int]]:
    return _outline(FILES[name], LANGUAGES[Path(name).suffix])


# -- 1. Go: each spec of a `var ( ... )` or `const ( ... )` group ------------------------------------
def test_go_each_spec_of_a_group_is_a_symbol() -> None:
    constants = ["O_RDONLY", "O_WRONLY", "O_RDWR", "O_APPEND", "O_CREATE", "O_EXCL", "O_SYNC", "O_TRUNC"]
    assert _file("os_file.go") == [
        ("method", "File.Name", 8, 9),
        ("variable", "Stdin", 14, 14), ("variable", "Stdout", 15, 15), ("variable", "Stderr", 16, 16),
        *(("constant", name, 22 + index, 22 + index) for index, name in enumerate(constants)),
        ("constant", "SEEK_SET", 34, 34), ("constant", "SEEK_CUR", 35, 35), ("constant", "SEEK_END", 36, 36)]
    signatures = {s.name: s.signature for s in walk(outline_source(GO_OS_FILE, "go"))}
    assert signatures["O_RDONLY"] == "const O_RDONLY int = syscall.O_RDONLY"  # the comment after it left out
    assert signatures["Stdin"] == 'var Stdin = NewFile(uintptr(syscall.Stdin), "/dev/stdin")'
    assert _file("io.go") == [  # ReadAtLeast's `var nn int` is a local
        ("constant", "SeekStart", 5, 5), ("constant", "SeekCurrent", 6, 6), ("constant", "SeekEnd", 7, 7),
        ("variable", "ErrShortWrite", 12, 12), ("function", "ReadAtLeast", 14, 29)]


def test_go_a_spec_of_several_names_gives_each() -> None:
    text = "package p\n\nvar (\n\ta, b = 1, 2\n\tc int\n)\n\nconst (\n\tX = iota\n\tY\n)\n\nfunc f() {\n\tvar (\n\t\tlocal = 1\n\t)\n}\n"
    assert _outline(text, "go") == [("variable", "a", 4, 4), ("variable", "b", 4, 4), ("variable", "c", 5, 5),
                                    ("constant", "X", 9, 9), ("constant", "Y", 10, 10), ("function", "f", 13, 17)]


# -- 2. JavaScript and TypeScript: the names a destructuring binds, not the pattern's text -------------
def test_a_destructuring_declares_each_name_it_binds() -> None:
    assert _file("utils.js") == [
        ("constant", "toString", 7, 7), ("constant", "getPrototypeOf", 8, 8), ("constant", "iterator", 9, 9),
        ("constant", "toStringTag", 9, 9),
        *(("constant", name, 11, 16) for name in ("isReadableStream", "isRequest", "isResponse", "isHeaders")),
        ("constant", "httpFollow", 18, 18), ("constant", "httpsFollow", 18, 18)]  # not the keys http, https
    assert _file("argsArgArrayOrObject.ts") == [
        ("constant", "isArray", 1, 1), ("constant", "getPrototypeOf", 2, 2), ("constant", "objectProto", 2, 2),
        ("constant", "getKeys", 2, 2), ("function", "argsArgArrayOrObject", 4, 26), ("function", "isPOJO", 28, 30)]


@pytest.mark.parametrize("language", ["javascript", "typescript"])
def test_a_destructuring_binds_its_names_in_the_smallest_case(language: str) -> None:
    text = "const { a, b: c, ...rest } = obj;\nconst [x, , y = 1] = arr;\nexport let { d: { e } } = o;\n"
    assert [(s.kind, s.name, s.signature) for s in walk(outline_source(text, language))] == [
        ("constant", "a", "const { a, b: c, ...rest } = obj"), ("constant", "c", "const { a, b: c, ...rest } = obj"),
        ("constant", "rest", "const { a, b: c, ...rest } = obj"), ("constant", "x", "const [x, , y = 1] = arr"),
        ("constant", "y", "const [x, , y = 1] = arr"), ("variable", "e", "let { d: { e } } = o")]


# -- 3. TypeScript: a method's overload signatures and its implementation are one symbol ---------------
def test_overload_signatures_are_the_first_lines_of_their_implementation() -> None:
    """The method is listed once, as its implementation (its signature, its def_line), its lines starting
    at the first overload signature with the comments above it: reading it shows every signature, replacing
    it replaces them all."""
    (observable,) = outline_source(RXJS_TO_PROMISE, "typescript")
    (to_promise,) = observable.children
    assert (to_promise.qualified_name, to_promise.kind, to_promise.line, to_promise.def_line, to_promise.end_line) == (
        "Observable.toPromise", "method", 2, 28, 39)
    assert to_promise.signature == "toPromise(promiseCtor?: PromiseConstructorLike): Promise<T | undefined>"
    (string,) = outline_source(ZOD_STRING, "typescript")
    assert (string.name, string.kind, string.line, string.def_line, string.end_line) == ("string", "function", 1, 3, 5)


def test_overloads_in_the_smallest_case_and_signatures_without_an_implementation() -> None:
    text = ("class A {\n  foo(a: string): void;\n  foo(a: number): void;\n  foo(a: any) {\n    return a;\n  }\n"
            "  bar(): void;\n  baz() {}\n}\ninterface I {\n  on(a: string): void;\n  on(a: number): void;\n}\n"
            "declare function g(a: string): void;\ndeclare function g(a: number): void;\n")
    assert [(s.kind, s.qualified_name, s.line, s.def_line, s.end_line) for s in walk(outline_source(text, "typescript"))] == [
        ("class", "A", 1, 1, 9), ("method", "A.foo", 2, 4, 6), ("method", "A.bar", 7, 7, 7),
        ("method", "A.baz", 8, 8, 8),  # another name's signature is not its own
        ("interface", "I", 10, 10, 13), ("method", "I.on", 11, 11, 11), ("method", "I.on", 12, 12, 12),
        ("function", "g", 14, 14, 14), ("function", "g", 15, 15, 15)]


# -- 4. methods defined by assignment ---------------------------------------------------------------
def test_a_function_assigned_to_a_member_is_a_method_of_that_object() -> None:
    """In a function's body too: zod assigns its methods to the instance its constructor's initializer is
    given; a value that is not a function (`inst.minDate = ...`) and a local (`c`) are not definitions."""
    assert _file("zod_date.ts") == [
        ("interface", "_ZodDate", 1, 9), ("method", "_ZodDate.min", 2, 2), ("method", "_ZodDate.max", 3, 3),
        ("property", "_ZodDate.minDate", 5, 6), ("property", "_ZodDate.maxDate", 7, 8),
        ("interface", "ZodDate", 11, 11), ("constant", "ZodDate", 12, 22),
        ("method", "ZodDate.inst.min", 16, 16), ("method", "ZodDate.inst.max", 17, 17),
        ("function", "date", 24, 26)]
    assert _file("express.js") == [  # `module.exports` is the module, no member: proto is what it names
        ("variable", "toString", 1, 1), ("function", "proto", 11, 29), ("function", "proto.router", 14, 16),
        ("method", "View.render", 39, 42)]


def test_methods_by_assignment_in_the_smallest_case() -> None:
    text = ("inst.lte = (value, params) => value;\nFoo.prototype.bar = function () {};\nexports.baz = function* () {};\n"
            "module.exports = function () {};\nfunction Make(inst) {\n  inst.gt = (v) => v;\n  this.run = function () {};\n"
            "  inst.value = 1;\n}\nobj[key] = function () {};\n")
    assert [(s.kind, s.qualified_name, s.signature) for s in walk(outline_source(text, "javascript"))] == [
        ("method", "inst.lte", "inst.lte = (value, params) =>"), ("method", "Foo.bar", "Foo.prototype.bar = function ()"),
        ("method", "exports.baz", "exports.baz = function* ()"), ("function", "Make", "function Make(inst)"),
        ("method", "Make.inst.gt", "inst.gt = (v) =>"), ("method", "Make.run", "this.run = function ()")]


# -- 5. Python: every target of a chain, and the names bound in an if, try or with of the module --------
def test_python_chains_and_names_bound_in_if_try_and_with() -> None:
    """A name bound again in another branch of the same statement is listed once, where it is first bound:
    the `try` body (the import worked), the `if` branch (the newer Python, the usual platform)."""
    assert _file("shutil.py") == [
        ("constant", "_ZLIB_SUPPORTED", 4, 4), ("constant", "_BZ2_SUPPORTED", 11, 11),
        ("constant", "_LZMA_SUPPORTED", 18, 18), ("constant", "_WINDOWS", 22, 22), ("variable", "posix", 23, 23),
        ("variable", "nt", 23, 23)]
    assert _file("os.py") == [("variable", "name", 2, 2), ("variable", "linesep", 3, 3)]
    assert _file("codecs.py") == [
        ("constant", "BOM_UTF8", 1, 1), ("constant", "BOM_LE", 4, 4), ("constant", "BOM_UTF16_LE", 4, 4),
        ("constant", "BOM_BE", 7, 7), ("constant", "BOM_UTF16_BE", 7, 7)]
    assert _file("fastparse.py") == [
        ("variable", "TryStar", 2, 2), ("variable", "ast_TypeAlias", 7, 7), ("variable", "ast_ParamSpec", 8, 8),
        ("variable", "ast_TypeVar", 9, 9), ("variable", "ast_TypeVarTuple", 10, 10)]
    assert _file("setup.py") == [("variable", "about", 1, 1), ("variable", "here", 2, 2), ("variable", "readme", 7, 7)]


def test_python_names_bound_in_branches_in_the_smallest_case() -> None:
    text = ("a = b = 1\ntry:\n    import tomllib\nexcept ImportError:\n    tomllib = None\n"
            "if sys.version_info >= (3, 11):\n    LIMIT = 1\nelif WINDOWS:\n    LIMIT = 2\n    SIZE = 2\nelse:\n    LIMIT = SIZE = 3\n"
            "with open(path) as f:\n    readme = f.read()\nfor item in items:\n    looped = item\nLIMIT = 4\n"
            "class C:\n    try:\n        field = 1\n    except Exception:\n        field = 2\n")
    assert _outline(text, "python") == [
        ("variable", "a", 1, 1), ("variable", "b", 1, 1), ("variable", "tomllib", 5, 5), ("constant", "LIMIT", 7, 7),
        ("constant", "SIZE", 10, 10), ("variable", "readme", 14, 14),  # not `f`, nor a loop's
        ("constant", "LIMIT", 17, 17),  # another statement: another definition
        ("class", "C", 18, 22), ("field", "C.field", 20, 20)]


# -- find_symbol finds them all, by name and by qualified name ----------------------------------------
@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("real")
    for name, text in FILES.items():
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize("prefilter", [True, False])
def test_find_symbol_finds_every_one_by_name_and_by_qualified_name(folder: Path, prefilter: bool) -> None:
    ctx, roots = Context(None, 1, "tools/call", {}), Roots([str(folder)])
    for path in FILES:
        for _kind, qualified, line, _end in _file(path):
            for query in {qualified, qualified.rpartition(".")[2]}:
                CACHE.clear()
                answer = find_symbol(ctx, roots, query, None, ".", 1000, prefilter=prefilter)
                assert answer.structured is not None
                found = [(item["path"], item["qualified_name"], item["line"]) for item in answer.structured["symbols"]]
                assert (path, qualified, line) in found, (query, path)


# -- C++ headers named .h (double-conversion, as ujson 5.10.0's sdist vendors it; brotli 1.1.0's C headers) ------
@pytest.fixture(scope="module")
def c_corpora() -> dict[str, Path]:
    """The two C and C++ corpora of bench/references_precision_c.py (pinned sdists)."""
    bench = load_script(REPO / "bench" / "references_precision_c.py", "bench_references_precision_c")
    names = ("double-conversion", "brotli")
    return dict(zip(names, fetched_corpora(bench, *names), strict=True))


def test_a_cpp_projects_h_headers_are_read_as_cpp_and_a_c_projects_as_c(c_corpora: dict[str, Path], tmp_path: Path) -> None:
    """C's grammar reads a class as a function and leaves its methods out; a `.h` file that holds what only C++
    writes is read as C++. brotli's headers, C with `extern "C"` for C++ readers, stay C."""
    languages: dict[str, set[str]] = {}
    for name, root in c_corpora.items():
        roots = Roots([str(root)])
        languages[name] = {read_source(roots, str(path), path.name).language for path in root.rglob("*.h")}
    assert languages == {"double-conversion": {"c", "cpp"}, "brotli": {"c"}}  # (utils.h is plain C macros)
    root = c_corpora["double-conversion"]
    source = read_source(Roots([str(root)]), str(root / "double-conversion" / "bignum.h"), "bignum.h")
    found = {(s.kind, s.qualified_name) for s in walk(outline_source(source.text, source.language))}
    assert {("module", "double_conversion"), ("class", "double_conversion.Bignum"),
            ("method", "double_conversion.Bignum.AssignUInt16"), ("method", "double_conversion.Bignum.Square"),
            ("constructor", "double_conversion.Bignum.Bignum")} <= found
    CACHE.clear()
    with Tools(root) as tools:  # find_symbol finds the declaration in the class too
        lines = {(item["path"], item["line"]) for item in tools.data("find_symbol", {"name": "Bignum.Square"})["symbols"]}
    assert lines == {("double-conversion/bignum.h", 58), ("double-conversion/bignum.cc", 355)}
    copy = tmp_path / "bignum.h"  # the symbol tools read it so too: a declaration in the class replaced in place
    copy.write_bytes((root / "double-conversion" / "bignum.h").read_bytes())
    with Tools(tmp_path, write=True) as tools:
        tools.call("replace_symbol", {"path": "bignum.h", "name": "Bignum.Square", "text": "void Square() const;"})
    assert copy.read_bytes() == (root / "double-conversion" / "bignum.h").read_bytes().replace(
        b"  void Square();", b"  void Square() const;")


def test_the_cpp_header_forms_and_c_lines_that_look_like_them() -> None:
    cpp = ["namespace a::b {", "namespace detail\n{", "class EXPORT_API Foo {", "class Foo\n{", "class Foo final : public Bar {",
           "template <typename T>", "  public:", "using namespace std;", "namespace {"]
    c = ["struct foo {", "int class_count;", "/* class Foo { */ int x;", "typedef struct x x;", "  class_t *c;",
         "#define public_api", "classify(x);", 'extern "C" {']
    assert [text for text in cpp if not CPP_HEADER.search(text)] == []
    assert [text for text in c if CPP_HEADER.search(text)] == []
