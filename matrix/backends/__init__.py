"""Ways to compile without running: ahead-of-time compiles for named targets and their tools."""
