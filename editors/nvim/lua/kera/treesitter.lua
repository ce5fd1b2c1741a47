-- Tree-sitter: the grammar in the repository's grammar/ directory.
--
-- With nvim-treesitter, register() adds the parser to it (then :TSInstall kera). Without it,
-- build_parser() compiles grammar/src into <site>/parser/kera.so and attach() starts Neovim's
-- own highlighter. Queries come from grammar/queries unless queries/kera/ is on 'runtimepath'.
local config = require("kera.config")

local M = {}

local uv = vim.loop
local api = vim.api

--- The grammar directory: the configured one, or <repo>/grammar next to this plugin.
function M.grammar_dir()
  local dir = config.options.grammar_dir
  if dir == nil then
    local root = config.repo_root()
    dir = root and (root .. "/grammar")
  end
  if dir and uv.fs_stat(dir .. "/src/parser.c") then
    return vim.fn.fnamemodify(dir, ":p"):gsub("/$", "")
  end
  return nil
end

--- Whether a "kera" parser can be loaded (from parser/kera.so on 'runtimepath').
function M.parser_available()
  local lang = vim.treesitter.language
  if lang.add then
    local ok, result = pcall(lang.add, "kera")
    if not ok or result == false then
      return false
    end
  else
    local ok, result = pcall(lang.require_language, "kera", nil, true)
    if not ok or not result then
      return false
    end
  end
  local inspect = lang.inspect or lang.inspect_language
  return (pcall(inspect, "kera"))
end

local function read_file(path)
  local f = io.open(path, "r")
  if not f then
    return nil
  end
  local text = f:read("*a")
  f:close()
  return text
end

local queries_set = false

--- Uses grammar/queries/*.scm for the "kera" language unless queries/kera/*.scm are on the
--- runtimepath already (those win: a user's or nvim-treesitter's copy).
local function set_queries()
  if queries_set then
    return
  end
  queries_set = true
  local dir = M.grammar_dir()
  if dir == nil then
    return
  end
  local set = vim.treesitter.query.set or vim.treesitter.query.set_query
  for _, name in ipairs({ "highlights", "locals", "folds" }) do
    if #api.nvim_get_runtime_file("queries/kera/" .. name .. ".scm", true) == 0 then
      local text = read_file(dir .. "/queries/" .. name .. ".scm")
      if text then
        local ok, err = pcall(set, "kera", name, text)
        if not ok then
          config.notify(("the %s query does not compile with this Neovim: %s"):format(name, err), vim.log.levels.WARN)
        end
      end
    end
  end
end

--- Starts tree-sitter highlighting in a buffer when a kera parser can be loaded and nothing
--- (nvim-treesitter's highlight module) has done so already.
function M.attach(bufnr)
  if not M.parser_available() then
    return false
  end
  set_queries()
  local highlighter = vim.treesitter.highlighter
  if highlighter.active[bufnr] then
    return true
  end
  if vim.treesitter.start then
    return (pcall(vim.treesitter.start, bufnr, "kera"))
  end
  local ok, parser = pcall(vim.treesitter.get_parser, bufnr, "kera")
  if not ok then
    return false
  end
  highlighter.new(parser)
  return true
end

--- Registers the grammar with nvim-treesitter when it is installed (both its classic
--- `get_parser_configs()` API and the newer `User TSUpdate` one), so that :TSInstall kera
--- builds the parser from the repository. Does nothing without nvim-treesitter.
function M.register()
  local dir = M.grammar_dir()
  if dir == nil then
    return false
  end
  local ok, parsers = pcall(require, "nvim-treesitter.parsers")
  if not ok then
    return false
  end
  if type(parsers.get_parser_configs) == "function" then
    parsers.get_parser_configs().kera = {
      install_info = {
        url = dir,
        files = { "src/parser.c", "src/scanner.c" },
        requires_generate_from_grammar = false,
        generate_requires_npm = false,
      },
      filetype = "kera",
    }
  else
    local function register()
      require("nvim-treesitter.parsers").kera = {
        install_info = { path = dir, generate = false, queries = "queries" },
        tier = 3,
      }
    end
    register()
    api.nvim_create_autocmd("User", { pattern = "TSUpdate", callback = register })
  end
  return true
end

local function normalized(path)
  return (vim.fn.resolve(vim.fn.fnamemodify(vim.fn.expand(path), ":p")):gsub("/+$", ""))
end

--- Whether `dir` is an entry of the 'runtimepath' option.
local function on_runtimepath(dir)
  local want = normalized(dir)
  for _, entry in ipairs(vim.split(vim.o.runtimepath, ",", { plain = true })) do
    if entry ~= "" and normalized(entry) == want then
      return true
    end
  end
  return false
end

--- The directory :KeraBuildParser builds into by default: stdpath("data") .. "/site", which is
--- on the default 'runtimepath' and where nvim-treesitter installs parsers too.
function M.default_parser_dir()
  return vim.fn.stdpath("data") .. "/site"
end

--- Compiles grammar/src/{parser,scanner}.c into <dir>/parser/kera.so with the system C compiler
--- (dir defaults to default_parser_dir()), for Neovim without nvim-treesitter, and makes it
--- the parser Neovim loads: `dir` is added to 'runtimepath' for this session when it is not
--- there. Returns the path and a list of warnings (a kera.so earlier on 'runtimepath' that
--- shadows it, a directory to add to 'runtimepath' in init.lua, a parser already loaded in this
--- session), or nil and the error.
function M.build_parser(dir)
  local grammar = M.grammar_dir()
  if grammar == nil then
    return nil, "grammar/src/parser.c not found (set grammar_dir in setup())"
  end
  dir = normalized(dir or M.default_parser_dir())
  vim.fn.mkdir(dir .. "/parser", "p")
  local out = dir .. "/parser/kera.so"
  local cc = vim.env.CC or "cc"
  if vim.fn.executable(cc) ~= 1 then
    return nil, ("no C compiler: `%s` is not executable (install one, or set $CC)"):format(cc)
  end
  local loaded_before = M.parser_available()
  -- Build beside the target and rename, so that a running Neovim that has the old file mapped
  -- keeps a consistent copy.
  local tmp = out .. ".tmp" .. uv.getpid()
  local output = vim.fn.system({
    cc, "-O2", "-shared", "-fPIC", "-I", grammar .. "/src",
    grammar .. "/src/parser.c", grammar .. "/src/scanner.c", "-o", tmp,
  })
  if vim.v.shell_error ~= 0 then
    os.remove(tmp)
    return nil, output
  end
  local ok, rename_err = os.rename(tmp, out)
  if not ok then
    os.remove(tmp)
    return nil, rename_err
  end
  local warnings = {}
  if not on_runtimepath(dir) then
    vim.opt.runtimepath:append(dir)
    table.insert(warnings, ("%s is not on 'runtimepath': added for this session; add it in "
      .. "init.lua (vim.opt.runtimepath:append(...)) to keep using it"):format(dir))
  else
    -- Neovim searches only the 'runtimepath' entries that existed when the option was last
    -- set (stdpath("data")/site often did not): setting it again makes it look in `dir`.
    vim.o.runtimepath = vim.o.runtimepath
  end
  local first = api.nvim_get_runtime_file("parser/kera.so", false)[1]
  if first and normalized(first) ~= normalized(out) then
    table.insert(warnings, ("Neovim loads %s first (earlier on 'runtimepath'); remove it, or "
      .. ":KeraBuildParser %s"):format(first, vim.fn.fnamemodify(first, ":h:h")))
  elseif loaded_before then
    table.insert(warnings, "a Kera parser was already loaded in this session: restart Neovim to use the new one")
  end
  return out, warnings
end

return M
