-- The language-server client: starting `kera lsp`, finding the client, requests, formatting.
--
-- Neovim 0.7 has vim.lsp.start_client + vim.lsp.buf_attach_client and
-- vim.lsp.buf.formatting_sync; later versions have vim.lsp.start and vim.lsp.buf.format.
-- Everything here feature-detects rather than checking version numbers, except for the
-- `client:method()` calling convention (0.11).
local config = require("kera.config")
local util = require("kera.util")

local M = {}

local uv = vim.loop
local api = vim.api

M.CLIENT_NAME = "kera"

--- Calls a client method: `client:request()` from 0.11 on (the dot form is deprecated there),
--- `client.request()` before.
function M.client_call(client, method, ...)
  if config.has("0.11") then
    return client[method](client, ...)
  end
  return client[method](...)
end

--- The command line that starts the language server, from the configuration.
function M.server_cmd(opts)
  opts = opts or config.options
  if opts.python and opts.python ~= "" then
    return { vim.fn.expand(opts.python), "-m", "kera_core", "lsp" }
  end
  if opts.cmd then
    if type(opts.cmd) == "string" then
      return { vim.fn.expand(opts.cmd), "lsp" }
    end
    return vim.deepcopy(opts.cmd)
  end
  if vim.fn.executable("kera") == 1 then
    return { "kera", "lsp" }
  end
  local root = config.repo_root()
  local venv = root and (root .. "/.venv/bin/kera")
  if venv and vim.fn.executable(venv) == 1 then
    return { venv, "lsp" }
  end
  return { "kera", "lsp" }
end

--- The project root of a buffer: the nearest directory upwards with one of the root markers.
function M.root_dir(bufnr)
  local name = api.nvim_buf_get_name(bufnr or 0)
  local dir = name ~= "" and vim.fn.fnamemodify(name, ":p:h") or uv.cwd()
  local found = vim.fs and vim.fs.find and vim.fs.find(config.options.root_markers, { path = dir, upward = true })[1]
  if found then
    return vim.fn.fnamemodify(found, ":h")
  end
  if not (vim.fs and vim.fs.find) then
    -- Neovim 0.7: no vim.fs; walk up by hand.
    local current = dir
    while current and current ~= "" do
      for _, marker in ipairs(config.options.root_markers) do
        if uv.fs_stat(current .. "/" .. marker) then
          return current
        end
      end
      local parent = vim.fn.fnamemodify(current, ":h")
      if parent == current then
        break
      end
      current = parent
    end
  end
  return dir
end

local function client_config(bufnr)
  local cfg = config.options
  local init_options = {}
  local settings = { kera = {} }
  if cfg.output_dir then
    local dir = vim.fn.expand(cfg.output_dir)
    init_options.outputDir = dir
    settings.kera.outputDir = dir
  end
  if type(cfg.same_bits) == "table" then
    init_options.sameBits = vim.deepcopy(cfg.same_bits)
    settings.kera.sameBits = vim.deepcopy(cfg.same_bits)
  end
  local root = M.root_dir(bufnr)
  return {
    name = M.CLIENT_NAME,
    cmd = M.server_cmd(cfg),
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = init_options,
    settings = settings,
    capabilities = cfg.capabilities or vim.lsp.protocol.make_client_capabilities(),
    handlers = cfg.handlers,
    on_attach = cfg.on_attach,
    flags = { debounce_text_changes = 150 },
  }
end

--------------------------------------------------------------------------------
-- Starting and finding the client
--------------------------------------------------------------------------------

-- root_dir -> client id: the one server of each root. Neovim's own bookkeeping cannot be used
-- for this: before the server has answered `initialize`, Neovim 0.7's client_is_stopped() and
-- 0.8-0.10's vim.lsp.start() do not see the client, so two buffers (or two FileType events for
-- one buffer) opened in that window would each start a server.
local clients_by_root = {}

--- The live client of an id: nil once it has exited or is shutting down.
local function live_client(id)
  local client = id and vim.lsp.get_client_by_id(id)
  if client == nil or (client.is_stopped and client.is_stopped()) then
    return nil
  end
  return client
end

--- Starts the server for a buffer (or reuses the one of its root) and attaches it: one server
--- per root, and one client per buffer, however often this is called. Returns the client id,
--- or nil when the server cannot be started.
function M.start(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local conf = client_config(bufnr)
  local id = clients_by_root[conf.root_dir]
  if live_client(id) == nil then
    id = nil
  end
  if id == nil then
    if vim.fn.executable(conf.cmd[1]) ~= 1 then
      config.notify(
        ("cannot start the language server: `%s` is not executable. Set `cmd` or `python` in "
          .. "require('kera').setup{}, see :KeraInfo"):format(conf.cmd[1]),
        vim.log.levels.ERROR
      )
      return nil
    end
    if vim.lsp.start then
      id = vim.lsp.start(conf, { bufnr = bufnr })
    else
      id = vim.lsp.start_client(conf)
    end
    if id == nil then
      config.notify("the language server did not start; see " .. vim.lsp.get_log_path(), vim.log.levels.ERROR)
      return nil
    end
    clients_by_root[conf.root_dir] = id
  end
  -- Attaching twice is a no-op; vim.lsp.start has attached already.
  vim.lsp.buf_attach_client(bufnr, id)
  vim.b[bufnr].kera_client_id = id
  return id
end

--- Stops every Kera client (:KeraRestart starts them again).
function M.stop_all()
  local clients = vim.lsp.get_clients and vim.lsp.get_clients({ name = M.CLIENT_NAME })
    or vim.lsp.get_active_clients()
  for _, client in pairs(clients) do
    if client.name == M.CLIENT_NAME then
      M.client_call(client, "stop")
    end
  end
  clients_by_root = {}
end

--- The Kera client attached to a buffer, if any.
function M.get_client(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ bufnr = bufnr, name = M.CLIENT_NAME })[1]
  end
  for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
    if client.name == M.CLIENT_NAME then
      return client
    end
  end
  return nil
end

--- Sends a request to the buffer's Kera client; `handler(err, result)` is called with the reply
--- (err is a string or an LSP error table).
function M.request(bufnr, method, params, handler)
  local client = M.get_client(bufnr)
  if client == nil then
    handler("no Kera language server is attached to this buffer (see :KeraInfo)", nil)
    return false
  end
  return M.client_call(client, "request", method, params, function(err, result)
    handler(err, result)
  end, bufnr)
end

--- The same, synchronously: returns result, err.
function M.request_sync(bufnr, method, params, timeout_ms)
  local client = M.get_client(bufnr)
  if client == nil then
    return nil, "no Kera language server is attached to this buffer"
  end
  local timeout = timeout_ms or config.options.timeout_ms
  local reply, err = M.client_call(client, "request_sync", method, params, timeout, bufnr)
  if reply == nil then
    return nil, err or "no reply"
  end
  return reply.result, reply.err
end

--- The function the cursor is in (see util.function_at).
function M.cursor_function(bufnr, known)
  local lnum = 1
  if api.nvim_get_current_buf() == bufnr then
    lnum = api.nvim_win_get_cursor(0)[1]
  end
  return util.function_at(api.nvim_buf_get_lines(bufnr, 0, -1, false), lnum, known)
end

--- The targets the server offers for the function under the cursor (synchronous: it asks the
--- server for the code actions at the cursor). Returns targets, function name.
function M.targets(bufnr, timeout_ms)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local client = M.get_client(bufnr)
  if client == nil then
    return {}, M.cursor_function(bufnr)
  end
  local params = vim.lsp.util.make_range_params(0, client.offset_encoding or "utf-16")
  params.context = { diagnostics = {}, triggerKind = 1 }
  local actions = M.request_sync(bufnr, "textDocument/codeAction", params, timeout_ms)
  local offers = util.offers_from_code_actions(actions)
  local names = {}
  for _, o in ipairs(offers) do
    if not vim.tbl_contains(names, o["function"]) then
      table.insert(names, o["function"])
    end
  end
  local fn = (#names > 0 and (M.cursor_function(bufnr, names) or names[1])) or M.cursor_function(bufnr)
  local targets = {}
  for _, o in ipairs(offers) do
    if o["function"] == fn and not vim.tbl_contains(targets, o.target) then
      table.insert(targets, o.target)
    end
  end
  return targets, fn
end

--- Formats a buffer with the server, synchronously (textDocument/formatting, or with `range`
--- ({start_line, end_line}, 1-based) textDocument/rangeFormatting for those lines). Returns
--- true when the server answered. Sent here rather than through vim.lsp.buf.format /
--- formatting_sync, which drop a server's error reply without a word: a failed request is
--- reported here, and a refusal (syntax errors) is explained by the server's
--- window/showMessage, which Neovim shows in the message area.
function M.format(bufnr, range)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local client = M.get_client(bufnr)
  if client == nil then
    config.notify("no Kera language server is attached to this buffer (see :KeraInfo)", vim.log.levels.WARN)
    return false
  end
  local params = vim.lsp.util.make_formatting_params()
  params.textDocument = { uri = vim.uri_from_bufnr(bufnr) }
  local method = "textDocument/formatting"
  if range then
    method = "textDocument/rangeFormatting"
    params.range = {
      start = { line = range[1] - 1, character = 0 },
      ["end"] = { line = range[2], character = 0 },
    }
  end
  local edits, err = M.request_sync(bufnr, method, params)
  if err then
    config.notify("formatting failed: " .. util.error_text(err), vim.log.levels.WARN)
    return false
  end
  if edits and #edits > 0 then
    vim.lsp.util.apply_text_edits(edits, bufnr, client.offset_encoding or "utf-16")
  end
  return true
end

return M
