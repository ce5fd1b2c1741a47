-- :KeraLower: the lowering of one function to one target (`kera/lowering`) in a scratch
-- buffer, refreshed on every :w of the source buffer.
local config = require("kera.config")
local lsp = require("kera.lsp")
local util = require("kera.util")

local M = {}

local api = vim.api

local function open_window(buf)
  local how = config.options.lower_split
  local wins = vim.fn.win_findbuf(buf)
  if #wins > 0 then
    return
  end
  if how == "split" then
    vim.cmd("split")
  elseif how == "tab" then
    vim.cmd("tabnew")
  elseif how ~= "current" then
    vim.cmd("vsplit")
  end
  api.nvim_win_set_buf(0, buf)
end

local function lowering_buffer(source, fn, target)
  local stem = vim.fn.fnamemodify(api.nvim_buf_get_name(source), ":t:r")
  local name = ("kera-lowering://%s/%s.%s"):format(stem, fn, target)
  local existing = vim.fn.bufnr("^" .. vim.fn.escape(name, "\\/.*$^~[]") .. "$")
  if existing > 0 and api.nvim_buf_is_valid(existing) then
    return existing
  end
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(buf, name)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "keralowering"
  return buf
end

local function fill(buf, text)
  local lines = vim.split(text or "", "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

local function request_lowering(source, fn, target, buf, callback)
  local params = { uri = vim.uri_from_bufnr(source), ["function"] = fn, target = target }
  lsp.request(source, "kera/lowering", params, function(err, result)
    if not api.nvim_buf_is_valid(buf) then
      return
    end
    if err ~= nil or type(result) ~= "table" then
      local msg = err ~= nil and util.error_text(err) or "the server returned no lowering"
      fill(buf, ("could not lower `%s` to %s: %s"):format(fn, target, msg))
      config.notify(("could not lower `%s` to %s: %s"):format(fn, target, msg), vim.log.levels.ERROR)
      vim.b[buf].kera_lowering = { uri = params.uri, ["function"] = fn, target = target, source = source, error = msg }
    else
      fill(buf, result.text)
      vim.b[buf].kera_lowering = {
        uri = params.uri,
        ["function"] = fn,
        target = result.target or target,
        fingerprint = result.fingerprint,
        source = source,
      }
    end
    if callback then
      callback(buf, err, result)
    end
  end)
end

local refresh_groups = {}

local function refresh_on_save(source)
  if refresh_groups[source] then
    return
  end
  refresh_groups[source] = api.nvim_create_augroup("kera_lowering_" .. source, { clear = true })
  api.nvim_create_autocmd("BufWritePost", {
    group = refresh_groups[source],
    buffer = source,
    callback = function()
      for _, buf in ipairs(api.nvim_list_bufs()) do
        if api.nvim_buf_is_valid(buf) then
          local ok, info = pcall(function()
            return vim.b[buf].kera_lowering
          end)
          if ok and type(info) == "table" and info.source == source then
            request_lowering(source, info["function"], info.target, buf)
          end
        end
      end
    end,
  })
end

--- :KeraLower {target} [function]: shows the lowering of the function under the cursor (or the
--- named one) of `source` (default: the current buffer) in a scratch buffer, refreshed on every
--- :w of the source. Calls `callback(buf, err, result)` when the reply is in. Returns the
--- scratch buffer.
function M.lower(target, fn, callback, source)
  source = (source == nil or source == 0) and api.nvim_get_current_buf() or source
  if vim.bo[source].filetype ~= "kera" then
    config.notify("not a Kera buffer", vim.log.levels.WARN)
    return nil
  end
  fn = fn or lsp.cursor_function(source, nil)
  if fn == nil then
    config.notify("put the cursor inside a function (`fn name(...) { ... }`)", vim.log.levels.WARN)
    return nil
  end
  local buf = lowering_buffer(source, fn, target)
  refresh_on_save(source)
  local from = api.nvim_get_current_win()
  open_window(buf)
  if config.options.lower_split ~= "current" and api.nvim_win_is_valid(from) then
    api.nvim_set_current_win(from) -- keep the cursor in the source
  end
  request_lowering(source, fn, target, buf, callback)
  return buf
end

return M
