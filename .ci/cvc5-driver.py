#!/usr/bin/env python3
"""A `cvc5` command for the policy proofs: SMT-LIB 2.6 on stdin, answers on stdout.

The cvc5 1.4.2 wheel of PyPI (pinned in .ci/cvc5) ships the solver library and its Python
bindings but no executable. This driver reads SMT-LIB from stdin interactively, one top-level
command at a time, parses each with cvc5's own parser (`cvc5.InputParser`, `cvc5.SymbolManager`)
and invokes it on a `cvc5.Solver`, printing what the cvc5 binary prints: `sat`/`unsat`/`unknown`
for `(check-sat)`, the model for `(get-model)` (`(` line, `define-fun` lines, `)` line), values
for `(get-value …)`, `(error "…")` for errors. A parse error prints
`(error "Parse Error: …")` and exits 1, as cvc5 does; `(exit)` and the end of stdin exit 0. Standard error is silenced (see `main`).

Options, as cvc5 takes them:
  --lang smt | --lang=smt2 | --lang smt2.6   the input language (SMT-LIB 2.6 is the only one)
  --tlimit=MS                                wall-clock limit of the whole process: on expiry the
                                             process ends by SIGALRM, as an interrupted cvc5 does
  --NAME=VALUE | --NAME | --no-NAME          any other solver option (`Solver.setOption`),
                                             re-applied after `(reset)`
"""

import os
import re
import signal
import sys

import cvc5

LANGS = {"smt", "smt2", "smt2.6", "smtlib2.6", "smt-lib-2.6"}


def fail_usage(message):
    sys.stderr.write(f"(error \"{message}\")\n")
    sys.exit(1)


def parse_args(argv):
    """Solver options (name, value) in order; the time limit in ms or None."""
    options = []
    tlimit = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--"):
            fail_usage(f"this driver reads stdin only; unexpected argument {arg}")
        name, eq, value = arg[2:].partition("=")
        if name == "lang" and not eq:
            i += 1
            if i == len(argv):
                fail_usage("--lang needs a value")
            value = argv[i]
            eq = "="
        if name == "lang":
            if value not in LANGS:
                fail_usage(f"unsupported language {value}: SMT-LIB 2.6 only")
        elif name == "tlimit":
            tlimit = int(value)
        elif eq:
            options.append((name, value))
        elif name.startswith("no-"):
            options.append((name[3:], "false"))
        else:
            options.append((name, "true"))
        i += 1
    return options, tlimit


class Session:
    """A solver, its symbol manager and an incremental parser over them."""

    def __init__(self, options):
        self.options = options
        self.start()

    def start(self):
        self.tm = cvc5.TermManager()
        self.solver = cvc5.Solver(self.tm)
        for name, value in self.options:
            self.solver.setOption(name, value)
        self.sm = cvc5.SymbolManager(self.tm)
        self.parser = cvc5.InputParser(self.solver, self.sm)
        self.parser.setIncrementalStringInput(cvc5.InputLanguage.SMT_LIB_2_6, "<stdin>")

    def run(self, text):
        """Parse and invoke one top-level command; returns False on (exit)."""
        if head(text) == "reset":
            # cvc5 answers (reset) with a fresh solver and symbol table, options re-applied.
            self.start()
            return True
        # One command per call: the parser reads exactly the text appended.
        self.parser.appendIncrementalStringInput(text + "\n")
        try:
            command = self.parser.nextCommand()
        except RuntimeError as err:
            emit(f'(error "Parse Error: {one_line(parse_message(err))}")\n')
            sys.exit(1)
        if command.isNull():
            return True
        if command.getCommandName() == "exit":
            return False
        try:
            out = command.invoke(self.solver, self.sm)
        except RuntimeError as err:
            out = f'(error "{one_line(str(err))}")\n'
        emit(out)
        return True


LOGIC_WARNING = re.compile(r"^\S+: (No set-logic|cvc5 will make|Consider setting|To suppress)")


def parse_message(err):
    """A parse error's text without the logic warnings the parser adds to it."""
    return " ".join(line for line in str(err).splitlines() if not LOGIC_WARNING.match(line))


def one_line(message):
    """An error message on one line, its quotes doubled as SMT-LIB strings write them."""
    return " ".join(message.split()).replace('"', '""')


def head(text):
    """The command name of a top-level s-expression, e.g. `reset` for `( reset )`."""
    inner = text.strip()[1:].lstrip()
    return inner.split(None, 1)[0].rstrip(")") if inner else ""


def emit(out):
    if out:
        sys.stdout.write(out)
        sys.stdout.flush()


class Splitter:
    """Cuts a character stream into top-level s-expressions (comments, strings and |symbols| aware)."""

    def __init__(self):
        self.buf = []
        self.depth = 0
        self.state = None  # None, '"', '|' or ';'

    def feed(self, chunk):
        for ch in chunk:
            if self.state == ";":
                if ch == "\n":
                    self.state = None
                continue
            if self.state is None and ch == ";":
                self.state = ";"
                continue
            if self.depth == 0 and self.state is None and ch != "(":
                if not ch.isspace():
                    # A bare token at top level: let the parser report it.
                    self.buf.append(ch)
                continue
            self.buf.append(ch)
            if self.state == '"':
                if ch == '"':
                    self.state = None  # "" re-opens on the next quote: an escaped quote
            elif self.state == "|":
                if ch == "|":
                    self.state = None
            elif ch in '"|':
                self.state = ch
            elif ch == "(":
                self.depth += 1
            elif ch == ")":
                self.depth -= 1
                if self.depth == 0:
                    text = "".join(self.buf)
                    self.buf = []
                    yield text

    def rest(self):
        return "".join(self.buf).strip()


def main():
    options, tlimit = parse_args(sys.argv[1:])
    # The parser warns on stderr for every query without (set-logic); cedar-policy-symcc never
    # reads the solver's stderr, so a long session would fill the pipe and stall. Errors go to
    # stdout as (error "…"), as cvc5 prints them.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)
    if tlimit is not None and tlimit > 0:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_REAL, tlimit / 1000.0)
    session = Session(options)
    splitter = Splitter()
    stdin = sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, "raw") else sys.stdin.buffer
    decoder = __import__("codecs").getincrementaldecoder("utf-8")()
    while True:
        data = os.read(stdin.fileno(), 1 << 16)
        for text in splitter.feed(decoder.decode(data, final=not data)):
            if not session.run(text):
                return 0
        if not data:
            rest = splitter.rest()
            if rest:
                session.run(rest)
            return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, ValueError, OSError) as err:
        emit(f'(error "{one_line(f"{type(err).__name__}: {err}")}")\n')
        sys.exit(1)
