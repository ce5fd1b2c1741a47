"""Neovim: one server per root and one client per buffer, however the plugin is loaded.

Each case is a real headless Neovim with a real user configuration (``$XDG_CONFIG_HOME``
/nvim/init.lua, not ``-u NONE``) that loads the plugin one way: exactly as docs/editors.md
says (the init.lua block and the ``pack/*/start`` link are read from the document), with
filetype detection switched off (no ``ftdetect/``), lazily after the files are open (as a
plugin manager's "very lazy" event does), lazily from a ``FileType`` autocommand, and with
``setup()`` called twice. Two files of one project are given on the command line, a third of
another project is opened with ``:edit``, and the first is reloaded with ``:edit!``. The server
command is a wrapper that counts its starts, so a second server for a root is seen even if it
exits at once.

The same sessions check that a refused format (a file with a syntax error) is explained in
the editor, and that ``:KeraBuildParser`` without an argument builds the parser where this
Neovim loads it from and starts highlighting in the open buffer.

Every case runs on each Neovim of tests/neovims.py (0.7 and a current release).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests import neovims
from tests.tools import tool_missing

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "editors" / "nvim"
DOCS = ROOT / "docs" / "editors.md"
KERA = Path(sys.executable).parent / "kera"
TIMEOUT_S = 120


def _documented_install() -> tuple[str, str]:
    """The init.lua block and the `ln -s` command of docs/editors.md's "### Install"."""
    text = DOCS.read_text()
    section = text[text.index("### Install") :]
    section = section[: section.index("\n### ", 1)]
    block = re.search(r"```lua\n(.*?)```", section, re.S)
    link = re.search(r"`(ln -s [^`]+)`", section)
    assert block and link, "docs/editors.md's Install section lost its init.lua block or ln -s"
    return block.group(1), link.group(1)


def _init_lua(mode: str, server: Path) -> tuple[str, list[tuple[Path, Path]]]:
    """The user's init.lua for a loading mode, and the links it needs (target, link)."""
    documented, link = _documented_install()
    cmd = f'{{ "{server}" }}'
    setup = f"require('kera').setup({{ cmd = {cmd} }})"
    if mode == "documented":
        body = documented.replace("/path/to/kera", str(ROOT))
        body = re.sub(r"cmd = \{[^}]*\}", f"cmd = {cmd}", body)
        assert f"cmd = {cmd}" in body, body
        return body, []
    if mode == "pack":
        _, _, src, dst = link.split()
        assert src == "/path/to/kera/editors/nvim", link
        assert dst.startswith("~/.local/share/nvim/"), link
        return setup + "\n", [(PLUGIN, Path(dst[len("~/.local/share/nvim/") :]))]
    rtp = f'vim.opt.runtimepath:append("{PLUGIN}")'
    if mode == "no-ftdetect":
        return f'vim.cmd("filetype off")\n{rtp}\n{setup}\n', []
    if mode == "lazy":
        # Loaded after startup, when the files are open and nothing has detected `.kera`.
        return f"vim.defer_fn(function()\n  {rtp}\n  {setup}\nend, 300)\n", []
    if mode == "lazy-filetype":
        # The user's own detection; the plugin is loaded from the first FileType event, the
        # way a plugin manager's `ft = "kera"` does (adding it, sourcing plugin/, setup()).
        return (
            'vim.api.nvim_create_autocmd({ "BufRead", "BufNewFile" }, { pattern = "*.kera",\n'
            '  callback = function() vim.bo.filetype = "kera" end })\n'
            'vim.api.nvim_create_autocmd("FileType", { pattern = "kera", once = true,\n'
            f'  callback = function()\n    {rtp}\n    vim.cmd("runtime! plugin/kera.lua")\n'
            f"    {setup}\n  end }})\n"
        ), []
    if mode == "setup-twice":
        return f"{rtp}\n{setup}\n{setup}\n", []
    raise AssertionError(mode)


CHECK = r"""
local out = { steps = {} }
local shown = {}
local function record(msg) table.insert(shown, tostring(msg)) end
-- What the person sees: vim.notify and the server's window/showMessage (which 0.7 writes
-- with nvim_out_write, out of reach of a wrapper of vim.notify).
local notify = vim.notify
vim.notify = function(msg, ...) record(msg); return notify(msg, ...) end
local show = vim.lsp.handlers["window/showMessage"]
vim.lsp.handlers["window/showMessage"] = function(err, result, ctx, config)
  if result then record(result.message) end
  return show(err, result, ctx, config)
end

local get = vim.lsp.get_clients or vim.lsp.get_active_clients
local function kera_clients(buf)
  local ids = {}
  for _, c in pairs(get()) do
    if c.name == "kera" and (buf == nil or (c.attached_buffers and c.attached_buffers[buf])) then
      table.insert(ids, c.id)
    end
  end
  table.sort(ids)
  return ids
end
local function attached(buf)
  return vim.wait(20000, function()
    local c = vim.lsp.get_client_by_id(kera_clients(buf)[1] or -1)
    return c ~= nil and c.initialized == true
  end, 50)
end
local function snapshot(label)
  vim.wait(1500, function() return false end, 50)  -- room for a stray second start
  local bufs = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.api.nvim_buf_get_name(b):match("%.kera$") then
      bufs[vim.fn.fnamemodify(vim.api.nvim_buf_get_name(b), ":t")] = {
        clients = kera_clients(b), filetype = vim.bo[b].filetype }
    end
  end
  out[label] = { buffers = bufs, clients = kera_clients(nil) }
end

local ok, err = xpcall(function()
  local a = vim.fn.bufnr("a.kera")
  vim.wait(3000, function() return vim.bo[a].filetype == "kera" end, 50)  -- "lazy" modes
  out.attached_a = attached(a)
  snapshot("start")
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("KERA_DIR_B")))
  out.attached_b = attached(vim.api.nvim_get_current_buf())
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("KERA_OTHER")))
  out.attached_c = attached(vim.api.nvim_get_current_buf())
  vim.cmd("buffer " .. a)
  vim.cmd("edit!")
  snapshot("after")

  if os.getenv("KERA_MORE") == "1" then
    -- A refused format says why.
    vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("KERA_BROKEN")))
    local broken = vim.api.nvim_get_current_buf()
    out.attached_broken = attached(broken)
    local before = table.concat(vim.api.nvim_buf_get_lines(broken, 0, -1, false), "\n")
    local n = #shown
    vim.cmd("KeraFormat")
    vim.wait(3000, function() return #shown > n end, 50)
    out.format_shown = { unpack(shown, n + 1) }
    out.format_unchanged = before == table.concat(vim.api.nvim_buf_get_lines(broken, 0, -1, false), "\n")

    -- :KeraBuildParser with no argument: built where this Neovim loads parsers from.
    vim.cmd("buffer " .. a)
    n = #shown
    vim.cmd("KeraBuildParser")
    vim.wait(60000, function() return #shown > n end, 50)
    out.build_shown = { unpack(shown, n + 1) }
    out.parser_loaded_from = vim.api.nvim_get_runtime_file("parser/kera.so", false)[1]
    out.data_dir = vim.fn.stdpath("data")
    vim.wait(2000, function() return vim.treesitter.highlighter.active[a] ~= nil end, 50)
    out.highlighting = vim.treesitter.highlighter.active[a] ~= nil
  end
end, debug.traceback)
if not ok then out.error = err end
out.shown = shown
local f = assert(io.open(os.getenv("KERA_E2E_OUT"), "w"))
f:write(vim.fn.json_encode(out))
f:close()
vim.cmd("qa!")
"""

MODES = ["documented", "pack", "no-ftdetect", "lazy", "lazy-filetype", "setup-twice"]


def _run(nvim: str, mode: str, work: Path, more: bool) -> dict:
    home = work / "home"
    for sub in ("config/nvim", "data/nvim", "state", "cache"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    starts = work / "starts.log"
    server = work / "kera-lsp"
    server.write_text(
        f'#!/bin/sh\necho "$$" >> "{starts}"\nexec "{KERA}" lsp "$@"\n'
        if not os.environ.get("KERA_LSP_CMD")
        else f'#!/bin/sh\necho "$$" >> "{starts}"\nexec {os.environ["KERA_LSP_CMD"]} "$@"\n'
    )
    server.chmod(0o755)
    init, links = _init_lua(mode, server)
    (home / "config" / "nvim" / "init.lua").write_text(init)
    for target, link in links:
        dst = home / "data" / "nvim" / link
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.symlink_to(target)
    proj, other = work / "proj", work / "other"
    for d in (proj, other):
        d.mkdir()
        (d / "pyproject.toml").write_text("")
    good = "pub fn f(x: f32) -> f32 {\n    x\n}\n"
    (proj / "a.kera").write_text(good)
    (proj / "b.kera").write_text(good.replace("f(", "g("))
    (proj / "broken.kera").write_text("fn broken(x: f32 {\n    x\n}\n")
    (other / "c.kera").write_text(good.replace("f(", "h("))
    check = work / "check.lua"
    check.write_text(CHECK)
    result = work / "result.json"
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "KERA_E2E_OUT": str(result),
        "KERA_DIR_B": str(proj / "b.kera"),
        "KERA_OTHER": str(other / "c.kera"),
        "KERA_BROKEN": str(proj / "broken.kera"),
        "KERA_MORE": "1" if more else "0",
    }
    cmd = [nvim, "--headless", "-i", "NONE", "-n", "a.kera", "b.kera", "-c", f"luafile {check}"]
    proc = neovims.run_headless(cmd, proj, env, TIMEOUT_S)
    if not result.exists():
        pytest.fail(f"nvim wrote no result (exit {proc.returncode}): {proc.stderr[-3000:]}")
    out = json.loads(result.read_text())
    out["_starts"] = len(starts.read_text().split()) if starts.exists() else 0
    out["_stderr"] = proc.stderr[-3000:]
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("version", neovims.params())
def test_one_server_per_root_and_one_client_per_buffer(version, mode, tmp_path):
    nvim = neovims.path_of(version)
    got = _run(nvim, mode, tmp_path, more=False)
    assert got.get("error") is None, got["error"]
    assert got["attached_a"] and got["attached_b"] and got["attached_c"], got
    start, after = got["start"], got["after"]
    assert start["buffers"]["a.kera"]["filetype"] == "kera", got
    assert len(start["buffers"]["a.kera"]["clients"]) == 1, got
    assert len(start["clients"]) == 1, got
    bufs = after["buffers"]
    assert set(bufs) == {"a.kera", "b.kera", "c.kera"}, got
    assert all(len(b["clients"]) == 1 for b in bufs.values()), got
    # a and b share their project's server; c has its own
    assert bufs["a.kera"]["clients"] == bufs["b.kera"]["clients"] == start["clients"], got
    assert bufs["c.kera"]["clients"] != bufs["a.kera"]["clients"], got
    assert len(after["clients"]) == 2, got
    assert got["_starts"] == 2, got  # exactly two servers were ever started


@pytest.mark.parametrize("version", neovims.params())
def test_refused_format_is_explained_and_the_parser_is_built_where_neovim_looks(version, tmp_path):
    nvim = neovims.path_of(version)
    if shutil.which(os.environ.get("CC", "cc")) is None:
        tool_missing("no C compiler to build the tree-sitter parser")
    got = _run(nvim, "documented", tmp_path, more=True)
    assert got.get("error") is None, got["error"]
    assert got["attached_broken"], got
    assert got["format_unchanged"], got
    said = [m for m in got["format_shown"] if "not formatting" in m]
    assert len(said) == 1, got["format_shown"]
    assert re.search(r"not formatting broken\.kera: K0602 at 1:\d+: .*syntax errors", said[0]), said

    built = Path(got["data_dir"]) / "site" / "parser" / "kera.so"
    assert built.is_file(), got
    assert Path(got["parser_loaded_from"]).resolve() == built.resolve(), got
    assert any(m.startswith("kera: built " + str(built)) for m in got["build_shown"]), got
    assert got["highlighting"], got
