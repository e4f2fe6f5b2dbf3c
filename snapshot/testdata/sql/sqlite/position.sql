SELECT source, revision FROM flows_run_source WHERE singleton = 1
