-- Pure helpers: no editor state, no requests (tests/test_nvim_e2e.py checks them).
local M = {}

local function fn_on_line(line)
  if line:match("^%s*//") or line:match("^%s*/%*") or line:match("^%s*%*") then
    return nil
  end
  return line:match("^%s*pub%s+fn%s+([%a_][%w_]*)") or line:match("^%s*fn%s+([%a_][%w_]*)")
end

--- The function the cursor is in: the nearest `fn <name>` at or above the cursor line (Kera
--- functions are top-level items and never nest), else the first one below. With `known`,
--- only those names count. Pure: takes the lines and a 1-based line number.
function M.function_at(lines, lnum, known)
  local function ok(name)
    if name == nil then
      return false
    end
    if known == nil then
      return true
    end
    return vim.tbl_contains(known, name)
  end
  lnum = math.max(1, math.min(lnum, #lines))
  for i = lnum, 1, -1 do
    local name = fn_on_line(lines[i])
    if ok(name) then
      return name
    end
  end
  for i = lnum + 1, #lines do
    local name = fn_on_line(lines[i])
    if ok(name) then
      return name
    end
  end
  return nil
end

--- The (function, target) pairs offered by code actions with command `kera.compileToTarget`
--- and arguments { uri, function, target }. Pure.
function M.offers_from_code_actions(actions)
  local offers, seen = {}, {}
  for _, action in ipairs(actions or {}) do
    local cmd = action
    if type(action.command) == "table" then
      cmd = action.command
    end
    local args = cmd.arguments
    if cmd.command == "kera.compileToTarget" and type(args) == "table" and #args >= 3 then
      local uri, fn, target = args[1], args[2], args[3]
      if type(fn) == "string" and type(target) == "string" and not seen[fn .. "\0" .. target] then
        seen[fn .. "\0" .. target] = true
        table.insert(offers, { uri = uri, ["function"] = fn, target = target, title = action.title })
      end
    end
  end
  return offers
end

--- `sha3-256:3f9a1c2d5e…` -> `3f9a1c2d…` (the form of the server's code lenses). Pure.
function M.short_fingerprint(fp, digits)
  digits = digits or 8
  if type(fp) ~= "string" then
    return ""
  end
  local hex = fp:match(":([^:]*)$") or fp
  if #hex <= digits then
    return hex
  end
  return hex:sub(1, digits) .. "…"
end

--- The text :KeraFingerprint shows for a `kera/fingerprint` reply. Pure.
function M.fingerprint_message(result, fn, all)
  if type(result) ~= "table" or type(result.fingerprint) ~= "string" or result.fingerprint == "" then
    return "kera: no fingerprint yet (save the file first)"
  end
  local notes = {}
  if type(result.savedVersion) == "number" then
    table.insert(notes, "saved version " .. result.savedVersion)
  end
  if result.changedSinceSave == true then
    table.insert(notes, "modified since the save")
  end
  local lines = {
    ("kera: %s%s"):format(result.fingerprint, #notes > 0 and (" (" .. table.concat(notes, "; ") .. ")") or ""),
  }
  for _, f in ipairs(result.functions or {}) do
    if all or f.name == fn then
      table.insert(lines, ("fn %s %s"):format(f.name, f.fingerprint))
    end
  end
  return table.concat(lines, "\n")
end

--- An LSP error (a table with `message`) or any value, as text.
function M.error_text(err)
  if type(err) == "table" then
    return err.message or vim.inspect(err)
  end
  return tostring(err)
end

return M
