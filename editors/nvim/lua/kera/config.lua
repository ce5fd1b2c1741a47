-- Options and small helpers shared by the Kera modules.
local M = {}

local uv = vim.loop

--- The root of the Kera repository this plugin lives in (nil if it cannot tell): this file is
--- <repo>/editors/nvim/lua/kera/config.lua, four directories below it.
function M.repo_root()
  local source = debug.getinfo(1, "S").source
  if source:sub(1, 1) ~= "@" then
    return nil
  end
  local path = source:sub(2)
  if not path:match("^/") and not path:match("^%a:[/\\]") then
    path = uv.cwd() .. "/" .. path
  end
  return vim.fn.fnamemodify(path, ":p:h:h:h:h:h")
end

--- The default options of require("kera").setup().
M.defaults = {
  -- The server command. nil: `kera lsp`, or the repository's .venv/bin/kera when this plugin
  -- is used from a Kera checkout that has one and `kera` is not on PATH.
  cmd = nil,
  -- A Python interpreter with Kera installed; when set, the server is `<python> -m kera_core lsp`.
  python = nil,
  -- Where "Compile to target" writes artifacts (initializationOptions.outputDir and the
  -- `kera.outputDir` setting). nil: the server's default.
  output_dir = nil,
  -- The same-bits check (the server's `kera.sameBits` settings): nil keeps the server's
  -- defaults, e.g. { enabled = false } or { targets = { "interp", "wasm" }, onOpen = true }.
  same_bits = nil,
  -- Files that mark a project root (the server's workspace folder).
  root_markers = { "pyproject.toml", ".git" },
  -- Passed to the LSP client as they are.
  on_attach = nil,
  capabilities = nil,
  handlers = nil,
  -- Format with the server before each :w.
  format_on_save = false,
  -- Tree-sitter: true registers the grammar (and starts highlighting where a parser is found);
  -- false leaves tree-sitter alone.
  treesitter = true,
  -- The tree-sitter grammar directory (with src/parser.c and queries/). nil: <repo>/grammar.
  grammar_dir = nil,
  -- How :KeraLower shows its buffer: "vsplit", "split", "tab" or "current".
  lower_split = "vsplit",
  -- Milliseconds to wait for synchronous requests (formatting, completion of target names).
  timeout_ms = 5000,
}

--- The options in force (setup() replaces them).
M.options = vim.deepcopy(M.defaults)

--- Whether this Neovim is at least `version` ("0.8", "0.11", ...).
function M.has(version)
  return vim.fn.has("nvim-" .. version) == 1
end

--- Shows a message. Scheduled, so that an error message from inside an autocommand or a
--- reply handler is shown rather than turned into an exception of whatever command ran.
function M.notify(msg, level)
  vim.schedule(function()
    vim.notify("kera: " .. msg, level or vim.log.levels.INFO)
  end)
end

return M
