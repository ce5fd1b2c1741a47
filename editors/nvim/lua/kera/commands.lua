-- The user commands (:KeraLower, :KeraCompile, :KeraFingerprint, :KeraSameBits, :KeraFormat,
-- :KeraBuildParser, :KeraInfo, :KeraRestart) and the client-side handlers of the server's lens/action commands.
local config = require("kera.config")
local fingerprint = require("kera.fingerprint")
local lower = require("kera.lower")
local lsp = require("kera.lsp")
local same_bits = require("kera.same_bits")
local treesitter = require("kera.treesitter")
local util = require("kera.util")

local M = {}

local api = vim.api

local function complete_targets()
  local ok, targets = pcall(lsp.targets, 0, 1000)
  return ok and targets or {}
end

local function version_string()
  local v = vim.version and vim.version()
  return v and ("%d.%d.%d"):format(v.major, v.minor, v.patch) or "?"
end

--- :KeraInfo: what a bug report or a "the server does not start" question needs.
local function info()
  local bufnr = api.nvim_get_current_buf()
  local cmd = lsp.server_cmd()
  local client = lsp.get_client(bufnr)
  local lines = {
    "Neovim " .. version_string()
      .. (vim.lsp.start and " (vim.lsp.start)" or " (vim.lsp.start_client + buf_attach_client)"),
    "server command: " .. table.concat(cmd, " ")
      .. (vim.fn.executable(cmd[1]) == 1 and "" or "   (NOT EXECUTABLE: set cmd or python in setup())"),
    "client: " .. (client and ("id " .. client.id .. ", root " .. tostring(client.config.root_dir))
      or "none attached to this buffer"),
    "LSP log: " .. vim.lsp.get_log_path() .. "   (more detail: :lua vim.lsp.set_log_level('debug'))",
    "grammar: " .. (treesitter.grammar_dir() or "not found"),
    "tree-sitter parser: "
      .. (treesitter.parser_available() and "loaded" or "not found (:KeraBuildParser, or :TSInstall kera)"),
    "nvim-treesitter: " .. (pcall(require, "nvim-treesitter") and "yes" or "no"),
  }
  vim.notify(table.concat(lines, "\n"), vim.log.levels.INFO)
end

local function lower_command(opts)
  local target, fn = opts.fargs[1], opts.fargs[2]
  if target then
    lower.lower(target, fn)
    return
  end
  -- No target given: offer the ones the server's code actions name for this function.
  local targets, cursor_fn = lsp.targets(0)
  if #targets == 0 then
    config.notify("the server offers no target here; give one: :KeraLower {target} [function]", vim.log.levels.WARN)
    return
  end
  vim.ui.select(targets, { prompt = ("Lower `%s` to:"):format(cursor_fn or "?") }, function(choice)
    if choice then
      lower.lower(choice, cursor_fn)
    end
  end)
end

local function restart()
  lsp.stop_all()
  vim.defer_fn(function()
    for _, buf in ipairs(api.nvim_list_bufs()) do
      if api.nvim_buf_is_loaded(buf) and vim.bo[buf].filetype == "kera" then
        lsp.start(buf)
      end
    end
  end, 500)
end

--- Runs the server's `kera.compileToTarget` for (uri, function, target) and reports the
--- artifact's path and fingerprint.
function M.compile(bufnr, uri, fn, target)
  local params = { command = "kera.compileToTarget", arguments = { uri, fn, target } }
  lsp.request(bufnr, "workspace/executeCommand", params, function(err, result)
    if err ~= nil then
      config.notify(("could not compile `%s` to %s: %s"):format(fn, target, util.error_text(err)), vim.log.levels.ERROR)
    elseif type(result) == "table" and type(result.path) == "string" then
      config.notify(("compiled %s to %s: %s (fingerprint %s)"):format(
        fn, tostring(result.target or target), result.path, util.short_fingerprint(result.fingerprint)))
    else
      config.notify(("compiled %s to %s"):format(fn, target))
    end
  end)
end

local function compile_command(opts)
  local bufnr = api.nvim_get_current_buf()
  local target, fn = opts.fargs[1], opts.fargs[2] or lsp.cursor_function(bufnr)
  if fn == nil then
    config.notify("put the cursor inside a function (`fn name(...) { ... }`)", vim.log.levels.WARN)
    return
  end
  M.compile(bufnr, vim.uri_from_bufnr(bufnr), fn, target)
end

--- Client-side handlers for the commands in the server's code lenses and code actions
--- (vim.lsp.commands): a lens `kera.showLowering` opens the lowering buffer, a same-bits lens
--- `kera.showSameBits` the digest table (:KeraSameBits), and the code
--- action `kera.compileToTarget` reports where the artifact went. Without these, Neovim would
--- send both to the server and drop the result.
function M.register_lsp_commands()
  vim.lsp.commands["kera.showLowering"] = function(command)
    local args = command.arguments or {}
    local uri, fn, target = args[1], args[2], args[3]
    if type(uri) ~= "string" or type(fn) ~= "string" or type(target) ~= "string" then
      config.notify("kera.showLowering needs [uri, function, target]", vim.log.levels.WARN)
      return
    end
    lower.lower(target, fn, nil, vim.uri_to_bufnr(uri))
  end
  vim.lsp.commands["kera.showSameBits"] = function(command)
    local args = command.arguments or {}
    local uri, fn = args[1], args[2]
    if type(uri) ~= "string" or type(fn) ~= "string" then
      config.notify("kera.showSameBits needs [uri, function]", vim.log.levels.WARN)
      return
    end
    same_bits.show(fn, vim.uri_to_bufnr(uri))
  end
  vim.lsp.commands["kera.compileToTarget"] = function(command, ctx)
    local args = command.arguments or {}
    local uri, fn, target = args[1], args[2], args[3]
    if type(uri) ~= "string" or type(fn) ~= "string" or type(target) ~= "string" then
      config.notify("kera.compileToTarget needs [uri, function, target]", vim.log.levels.WARN)
      return
    end
    M.compile(ctx and ctx.bufnr or vim.uri_to_bufnr(uri), uri, fn, target)
  end
end

local created = false

--- Creates the user commands (plugin/kera.lua does this at start-up, setup() too).
function M.create()
  if created then
    return
  end
  created = true
  api.nvim_create_user_command("KeraLower", lower_command, {
    nargs = "*",
    complete = function(_, line)
      if #vim.split(vim.trim(line), "%s+") > 2 then
        return {}
      end
      return complete_targets()
    end,
    desc = "Kera: show the lowering of the function under the cursor to {target}",
  })
  api.nvim_create_user_command("KeraCompile", compile_command, {
    nargs = "+",
    complete = function(_, line)
      if #vim.split(vim.trim(line), "%s+") > 2 then
        return {}
      end
      return complete_targets()
    end,
    desc = "Kera: compile the function under the cursor to {target} (the server writes the artifact)",
  })
  api.nvim_create_user_command("KeraFingerprint", function(opts)
    fingerprint.show(opts.bang)
  end, { bang = true, desc = "Kera: the fingerprint as of the last save (! lists every function)" })
  api.nvim_create_user_command("KeraSameBits", function(opts)
    local fn = vim.trim(opts.args)
    same_bits.show(fn ~= "" and fn or nil)
  end, {
    nargs = "?",
    desc = "Kera: the same-bits table (result digest per target) of the function under the cursor",
  })
  api.nvim_create_user_command("KeraFormat", function(opts)
    lsp.format(0, opts.range > 0 and { opts.line1, opts.line2 } or nil)
  end, { range = true, desc = "Kera: format the buffer (or the range) with the server" })
  api.nvim_create_user_command("KeraBuildParser", function(opts)
    -- opts.args, not opts.fargs: Neovim 0.7 gives fargs = { "" } for a missing "?" argument.
    local dir = vim.trim(opts.args)
    local out, err = treesitter.build_parser(dir ~= "" and dir or nil)
    if out then
      local warnings = err
      local started = 0
      if #warnings == 0 and config.options.treesitter then
        for _, buf in ipairs(api.nvim_list_bufs()) do
          if api.nvim_buf_is_loaded(buf) and vim.bo[buf].filetype == "kera" and treesitter.attach(buf) then
            started = started + 1
          end
        end
      end
      local msg = "built " .. out
      if started > 0 then
        msg = msg .. ("; tree-sitter highlighting started in %d buffer(s)"):format(started)
      end
      for _, w in ipairs(warnings) do
        msg = msg .. "\n" .. w
      end
      config.notify(msg, #warnings > 0 and vim.log.levels.WARN or vim.log.levels.INFO)
    else
      config.notify("could not build the parser: " .. tostring(err), vim.log.levels.ERROR)
    end
  end, { nargs = "?", complete = "dir", desc = "Kera: compile the tree-sitter parser" })
  api.nvim_create_user_command("KeraInfo", info, { desc = "Kera: server command, client, log file" })
  api.nvim_create_user_command("KeraRestart", restart, { desc = "Kera: restart the language server" })
end

return M
