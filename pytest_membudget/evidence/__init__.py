"""Evidence for a failing budget: the traced rerun after the window, the allocation sites that
grew, the object types that multiplied, the tasks, threads and descriptors left behind. Runs
only after a failure, so a passing test pays nothing for it."""
