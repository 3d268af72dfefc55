zklock exec --stats /zklock-tour/cli -- sleep 0.2    # on stderr at the end: waited ... ms, held ... ms
timeout 2 zklock ls --watch /zklock-tour/cli || true  # a live view of the queue; Ctrl-C ends it
