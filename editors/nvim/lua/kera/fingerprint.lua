-- Fingerprints: `kera/fingerprint`, b:kera_fingerprint and a 'statusline' component.
local config = require("kera.config")
local lsp = require("kera.lsp")
local util = require("kera.util")

local M = {}

local api = vim.api

--- Asks the server for the buffer's fingerprint (as of its last save); caches the reply in
--- b:kera_fingerprint and calls `callback(result, err)`.
function M.fingerprint(bufnr, callback)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  lsp.request(bufnr, "kera/fingerprint", { uri = vim.uri_from_bufnr(bufnr) }, function(err, result)
    if err == nil and type(result) == "table" and api.nvim_buf_is_valid(bufnr) then
      vim.b[bufnr].kera_fingerprint = result
    end
    if callback then
      callback(result, err)
    end
  end)
end

--- For 'statusline': the short fingerprint as of the last save, "" when unknown.
---   set statusline=%f\ %{v:lua.require'kera'.statusline()}
function M.statusline(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local ok, result = pcall(function()
    return vim.b[bufnr].kera_fingerprint
  end)
  if not ok or type(result) ~= "table" or type(result.fingerprint) ~= "string" then
    return ""
  end
  local modified = result.changedSinceSave == true and " (modified)" or ""
  return "kera " .. util.short_fingerprint(result.fingerprint) .. modified
end

--- :KeraFingerprint[!]: echoes the fingerprint as of the last save and the one of the function
--- under the cursor (all functions with !).
function M.show(all)
  local bufnr = api.nvim_get_current_buf()
  M.fingerprint(bufnr, function(result, err)
    if err ~= nil then
      config.notify("kera/fingerprint failed: " .. util.error_text(err), vim.log.levels.ERROR)
      return
    end
    local names = {}
    for _, f in ipairs((type(result) == "table" and result.functions) or {}) do
      table.insert(names, f.name)
    end
    vim.notify(util.fingerprint_message(result, lsp.cursor_function(bufnr, names), all), vim.log.levels.INFO)
  end)
end

return M
