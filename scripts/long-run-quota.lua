-- What both wrk scripts of scripts/long-run share (loaded with dofile): a
-- thread stops after LONG_RUN_QUOTA answers and leaves a marker named by its
-- `id` (set in `setup`) in LONG_RUN_DONE_DIR.

local quota = tonumber(os.getenv("LONG_RUN_QUOTA"))
local done_directory = os.getenv("LONG_RUN_DONE_DIR")

function stop_at_quota(answers)
  if answers == quota then
    -- wrk's main thread sleeps for -d regardless: tell the driver, which
    -- ends wrk with SIGINT (wrk then prints its summary and calls done).
    local marker = io.open(done_directory .. "/" .. id, "w")
    marker:close()
    wrk.thread:stop()
  end
end
