"""moby-ab harness: suite file -> plan -> runner -> results.json -> statistics -> report."""
