-- The same-bits lens (`kera.showSameBits`) and :KeraSameBits: the per-target result digests of
-- one exported function (`kera/sameBits`) in a scratch buffer `kera-same-bits://<file>/<fn>`.
-- The server runs the check after each save; the request waits for a running check (or starts
-- one), so the buffer fills in when the check ends.
local config = require("kera.config")
local lsp = require("kera.lsp")
local util = require("kera.util")

local M = {}

local api = vim.api

local function table_buffer(source, fn)
  local stem = vim.fn.fnamemodify(api.nvim_buf_get_name(source), ":t:r")
  local name = ("kera-same-bits://%s/%s"):format(stem, fn)
  local existing = vim.fn.bufnr("^" .. vim.fn.escape(name, "\\/.*$^~[]") .. "$")
  if existing > 0 and api.nvim_buf_is_valid(existing) then
    return existing
  end
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(buf, name)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "kerasamebits"
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

--- Shows the same-bits table of `fn` (default: the function under the cursor) of `source`
--- (default: the current buffer) in a split; calls `callback(buf, err, result)` when the
--- reply is in. Returns the scratch buffer.
function M.show(fn, source, callback)
  source = (source == nil or source == 0) and api.nvim_get_current_buf() or source
  fn = fn or lsp.cursor_function(source, nil)
  if fn == nil then
    config.notify("put the cursor inside a function (`pub fn name(...) { ... }`)", vim.log.levels.WARN)
    return nil
  end
  local buf = table_buffer(source, fn)
  if #vim.fn.win_findbuf(buf) == 0 then
    local from = api.nvim_get_current_win()
    vim.cmd(config.options.lower_split == "split" and "split" or "vsplit")
    api.nvim_win_set_buf(0, buf)
    if api.nvim_win_is_valid(from) then
      api.nvim_set_current_win(from)
    end
  end
  fill(buf, ("same bits of `%s`: checking…"):format(fn))
  local params = { uri = vim.uri_from_bufnr(source), ["function"] = fn }
  lsp.request(source, "kera/sameBits", params, function(err, result)
    if not api.nvim_buf_is_valid(buf) then
      return
    end
    if err ~= nil or type(result) ~= "table" then
      local msg = err ~= nil and util.error_text(err) or "the server returned no table"
      fill(buf, ("could not check `%s`: %s"):format(fn, msg))
      config.notify(("could not check `%s`: %s"):format(fn, msg), vim.log.levels.ERROR)
      vim.b[buf].kera_same_bits = { uri = params.uri, ["function"] = fn, source = source, error = msg }
    else
      fill(buf, result.text)
      vim.b[buf].kera_same_bits = {
        uri = params.uri,
        ["function"] = fn,
        source = source,
        status = result.status,
        verdict = result.verdict,
        title = result.title,
      }
    end
    if callback then
      callback(buf, err, result)
    end
  end)
  return buf
end

return M
