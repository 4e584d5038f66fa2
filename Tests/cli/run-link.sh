# --phy and --no-data-length: checked before any radio work (sourced by run.sh).
run phy-bad 2 "$bin" gatt AA:BB:CC:DD:EE:FF --phy 3m --transport tcp:127.0.0.1:9 && expect_err phy-bad "--phy takes auto, 1m, 2m or coded, not '3m'"
run phy-kernel 2 "$bin" read AA:BB:CC:DD:EE:FF 2a19 --phy 2m --transport l2cap:hci0 && expect_err phy-kernel "the kernel owns the link"
run dl-kernel 2 "$bin" subscribe AA:BB:CC:DD:EE:FF 2a19 --no-data-length --transport l2cap:hci0 && expect_err dl-kernel "the kernel owns the link"
run phy-help 0 "$bin" help monitor && expect_out phy-help "--phy P"
run phy-upper 1 "$bin" gatt AA:BB:CC:DD:EE:FF/public --phy 2M --transport tcp:127.0.0.1:9 && expect_err phy-upper "refused"
