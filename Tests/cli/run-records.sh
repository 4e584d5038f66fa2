# records: the request is checked before any radio work (sourced by run.sh).
T=(--transport tcp:127.0.0.1:9)   # nothing listens: a usage error must come before it is tried
run records-no-device 2 "$bin" records "${T[@]}" && expect_err records-no-device "expected one device"
run records-delete-unasked 2 "$bin" records Meter-1 --delete "${T[@]}" && expect_err records-delete-unasked "add --yes to mean it"
run records-yes-alone 2 "$bin" records Meter-1 --yes "${T[@]}" && expect_err records-yes-alone "--yes goes with --delete"
run records-count-delete 2 "$bin" records Meter-1 --count --delete --yes "${T[@]}" && expect_err records-count-delete "give one"
run records-two-selections 2 "$bin" records Meter-1 --last --since 4 "${T[@]}" && expect_err records-two-selections "give one selection, not --last and --since"
run records-bad-seq 2 "$bin" records Meter-1 --since -1 "${T[@]}" && expect_err records-bad-seq "--since takes a sequence number 0...65535, not '-1'"
run records-big-seq 2 "$bin" records Meter-1 --until 65536 "${T[@]}" && expect_err records-big-seq "not '65536'"
run records-bad-range 2 "$bin" records Meter-1 --range 9-3 "${T[@]}" && expect_err records-bad-range "--range takes A-B"
run records-bp 2 "$bin" records Meter-1 --service bp "${T[@]}" && expect_err records-bp "keep no records behind a control point"
run records-plx-last 2 "$bin" records Meter-1 --service plx --last "${T[@]}" && expect_err records-plx-last "all records only"
run records-timeout 2 "$bin" records Meter-1 --procedure-timeout 0 "${T[@]}" && expect_err records-timeout "--procedure-timeout takes seconds"
run records-help 0 "$bin" help records && { expect_out records-help "--delete --yes"; expect_out records-help "Abort Operation"; }
run records-runs-to-the-controller 1 "$bin" records AA:BB:CC:DD:EE:FF/random --since 3 --json "${T[@]}" && expect_err records-runs-to-the-controller "refused"
