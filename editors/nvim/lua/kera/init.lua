-- Kera for Neovim: the `kera lsp` client, tree-sitter registration and the :Kera* commands.
--
-- Works on Neovim 0.7 (Debian 12) and newer, with no plugin manager and no other plugin:
--   * 0.7 starts the server with vim.lsp.start_client + vim.lsp.buf_attach_client and formats
--     with vim.lsp.buf.formatting_sync; newer versions use vim.lsp.start and vim.lsp.buf.format.
--   * nvim-treesitter is optional: when it is there, the parser in the repository's grammar/
--     is registered with it; without it, a parser built by :KeraBuildParser is used directly.
--
--   require("kera").setup({ cmd = { "/path/to/kera/.venv/bin/kera", "lsp" } })
--
-- See docs/editors.md in the Kera repository. Modules: config (options), lsp (client,
-- requests, formatting), lower (:KeraLower), same_bits (:KeraSameBits), fingerprint (:KeraFingerprint, statusline),
-- treesitter, commands, util (pure helpers).
local commands = require("kera.commands")
local config = require("kera.config")
local fingerprint = require("kera.fingerprint")
local lower = require("kera.lower")
local lsp = require("kera.lsp")
local same_bits = require("kera.same_bits")
local treesitter = require("kera.treesitter")
local util = require("kera.util")

local M = {}

local api = vim.api

-- The public API.
M.start = lsp.start
M.get_client = lsp.get_client
M.request = lsp.request
M.request_sync = lsp.request_sync
M.server_cmd = lsp.server_cmd
M.root_dir = lsp.root_dir
M.targets = lsp.targets
M.format = lsp.format
M.lower = lower.lower
M.same_bits = same_bits.show
M.fingerprint = fingerprint.fingerprint
M.statusline = fingerprint.statusline
M.build_parser = treesitter.build_parser
M.grammar_dir = treesitter.grammar_dir
M.function_at = util.function_at
M.offers_from_code_actions = util.offers_from_code_actions
M.short_fingerprint = util.short_fingerprint
M.fingerprint_message = util.fingerprint_message
M.create_commands = commands.create
M.compile = commands.compile

--- The options in force.
function M.options()
  return config.options
end

local function on_filetype(bufnr)
  if vim.bo[bufnr].buftype ~= "" then
    return
  end
  lsp.start(bufnr)
  if config.options.treesitter then
    vim.schedule(function()
      if api.nvim_buf_is_valid(bufnr) then
        treesitter.attach(bufnr)
      end
    end)
  end
end

--- Sets Kera up: filetype detection, the LSP client for every `kera` buffer, tree-sitter and
--- the user commands. Call it once from init.lua; calling it again replaces the options.
function M.setup(opts)
  config.options = vim.tbl_deep_extend("force", vim.deepcopy(config.defaults), opts or {})
  commands.create()
  commands.register_lsp_commands()

  local group = api.nvim_create_augroup("kera", { clear = true })
  -- The same rule as ftdetect/kera.lua, for set-ups that do not load ftdetect/ (`-u NONE`).
  api.nvim_create_autocmd({ "BufRead", "BufNewFile" }, {
    group = group,
    pattern = "*.kera",
    callback = function()
      if vim.bo.filetype ~= "kera" then
        vim.bo.filetype = "kera"
      end
    end,
  })
  api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = "kera",
    callback = function(args)
      on_filetype(args.buf)
    end,
  })
  api.nvim_create_autocmd("BufWritePre", {
    group = group,
    pattern = "*.kera",
    callback = function(args)
      if config.options.format_on_save and lsp.get_client(args.buf) then
        lsp.format(args.buf)
      end
    end,
  })
  api.nvim_create_autocmd("BufWritePost", {
    group = group,
    pattern = "*.kera",
    callback = function(args)
      if lsp.get_client(args.buf) then
        -- Keep b:kera_fingerprint (and so M.statusline()) current.
        fingerprint.fingerprint(args.buf)
      end
    end,
  })
  if config.options.treesitter then
    treesitter.register()
  end
  -- Buffers that were already open when setup() ran (a plugin manager loading Kera lazily,
  -- or setup() called late): a `*.kera` buffer nothing has detected yet gets the filetype,
  -- which starts the client through the FileType autocommand above; one detected already
  -- is started directly. Starting twice attaches the one client once (lsp.start).
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) then
      if vim.bo[buf].filetype == "kera" then
        on_filetype(buf)
      elseif vim.bo[buf].filetype == "" and api.nvim_buf_get_name(buf):match("%.kera$") then
        vim.bo[buf].filetype = "kera"
      end
    end
  end
end

return M
