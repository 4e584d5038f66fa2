# Sourced by run.sh: serve, chat and l2cap take their options as typed settings, so every
# mistake is a usage error (exit 2) before a controller opens (the transport given here
# refuses connections: had it been opened, the exit would be 1).
no_ctl="--transport tcp:127.0.0.1:1"
# shellcheck disable=SC2086
{
run serve-no-profile 2 "$bin" serve $no_ctl && expect_err serve-no-profile "give at least one --profile"
run serve-bad-profile 2 "$bin" serve --profile thermo $no_ctl && expect_err serve-bad-profile "unknown profile 'thermo'"
run serve-privacy-random 2 "$bin" serve --profile battery --privacy --random-address $no_ctl \
  && expect_err serve-privacy-random "--privacy and --random-address exclude each other"
run serve-rpa-alone 2 "$bin" serve --profile battery --rpa-timeout 60 $no_ctl && expect_err serve-rpa-alone "--rpa-timeout goes with --privacy"
run serve-rpa-range 2 "$bin" serve --profile battery --privacy --rpa-timeout 5 $no_ctl && expect_err serve-rpa-range "rpa-timeout"
run serve-pdus 2 "$bin" serve --profile battery --extended --legacy $no_ctl && expect_err serve-pdus "exclude each other"
run serve-manual 2 "$bin" serve --profile battery --manual $no_ctl && expect_err serve-manual "add --profile 8ball"
run serve-security 2 "$bin" serve --profile battery --security high $no_ctl && expect_err serve-security "encrypted or authenticated"
run serve-interval 2 "$bin" serve --profile battery --adv-interval 5 $no_ctl && expect_err serve-interval "20-10240 ms"
run serve-name 2 "$bin" serve --profile battery --name "" $no_ctl && expect_err serve-name "1-248 bytes"
run serve-bad-pairing 2 "$bin" serve --profile battery --io-capability telepathy $no_ctl && expect_err serve-bad-pairing "io-capability"
run serve-runs-to-the-controller 1 "$bin" serve --profile battery,thermometer --privacy --rpa-timeout 60 $no_ctl \
  && expect_err serve-runs-to-the-controller "connection refused"
run chat-linger-waiting 2 "$bin" chat --linger 2 $no_ctl && expect_err chat-linger-waiting "--linger goes with connecting"
run chat-phy-waiting 2 "$bin" chat --phy 2m $no_ctl && expect_err chat-phy-waiting "--phy goes with connecting (chat ADDR|NAME)"
run chat-timeout-waiting 2 "$bin" chat --connect-timeout 3 $no_ctl && expect_err chat-timeout-waiting "--connect-timeout goes with connecting"
run chat-name-connecting 2 "$bin" chat Thermo --name x $no_ctl && expect_err chat-name-connecting "--name goes with waiting"
run chat-name-empty 2 "$bin" chat --name "" $no_ctl && expect_err chat-name-empty "1-248 bytes"
run chat-bad-linger 2 "$bin" chat Thermo --linger -1 $no_ctl && expect_err chat-bad-linger "linger"
run chat-kernel 2 "$bin" chat Thermo --transport l2cap:hci0 && expect_err chat-kernel "chat needs an HCI transport"
run l2cap-listen-security 2 "$bin" l2cap listen 0x80 --security high $no_ctl && expect_err l2cap-listen-security "encrypted or authenticated"
run l2cap-listen-name 2 "$bin" l2cap listen 0x80 --name "" $no_ctl && expect_err l2cap-listen-name "1-248 bytes"
run l2cap-listen-linger 2 "$bin" l2cap listen 0x80 --linger 1 $no_ctl && expect_err l2cap-listen-linger "--linger goes with connect"
run l2cap-listen-phy 2 "$bin" l2cap listen 0x80 --phy 2m $no_ctl && expect_err l2cap-listen-phy "--phy goes with connect: waiting, the link is the one the central opens"
run l2cap-listen-dl 2 "$bin" l2cap listen 0x80 --no-data-length $no_ctl && expect_err l2cap-listen-dl "--no-data-length goes with connect"
run l2cap-connect-name 2 "$bin" l2cap connect Thermo 0x80 --name x $no_ctl && expect_err l2cap-connect-name "--name and --security go with listen"
run l2cap-connect-timeout 2 "$bin" l2cap connect Thermo 0x80 --scan-timeout 0 $no_ctl && expect_err l2cap-connect-timeout "scan-timeout"
run l2cap-runs-to-the-controller 1 "$bin" l2cap listen 0x80 --security encrypted $no_ctl \
  && expect_err l2cap-runs-to-the-controller "connection refused"
}
