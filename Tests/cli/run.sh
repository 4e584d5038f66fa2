#!/usr/bin/env bash
# CLI behaviour tests: output, JSON validity, error messages and exit codes.
#   Tests/cli/run.sh PATH/TO/hcigatt
set -uo pipefail
bin=${1:?usage: run.sh PATH/TO/hcigatt}
failures=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME EXPECTED_RC CMD... : runs CMD, keeps stdout/stderr in $out/$err.
run() {
  local name=$1 want=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit code $rc, want $want"; echo "  stdout: $out" | head -5; echo "  stderr: $err" | head -5
    failures=$((failures + 1)); return 1
  fi
  return 0
}
expect_out() { grep -qF -- "$2" <<<"$out" || { echo "FAIL $1: stdout lacks '$2'"; echo "$out" | head -20; failures=$((failures + 1)); }; }
expect_err() { grep -qF -- "$2" <<<"$err" || { echo "FAIL $1: stderr lacks '$2'"; echo "$err" | head -5; failures=$((failures + 1)); }; }
expect_json_lines() {
  python3 -c '
import json, sys
n = 0
for line in sys.stdin:
    json.loads(line); n += 1
if n != int(sys.argv[1]): sys.exit(f"{n} JSON lines, want {sys.argv[1]}")
' "$2" <<<"$out" || { echo "FAIL $1: not $2 valid JSON lines"; failures=$((failures + 1)); }
}

AD="02 01 06 0C 09 54 68 65 72 6D 6F 2D 31 32 33 34 05 03 09 18 0F 18 07 FF 4C 00 01 02 03 04"

run help 0 "$bin" --help && expect_out help "decode"
run help-decode 0 "$bin" help decode && { expect_out help-decode "--json"; expect_out help-decode "h4"; expect_out help-decode "att"; }
run no-args 2 "$bin"
run unknown-command 2 "$bin" frobnicate && expect_err unknown-command "unknown command 'frobnicate'"
run unknown-kind 2 "$bin" decode nope 00 && expect_err unknown-kind "unknown kind 'nope'"
run missing-kind 2 "$bin" decode && expect_err missing-kind "missing KIND"
run unknown-option 2 "$bin" decode ad --frob 00 && expect_err unknown-option "unknown option --frob"
# Global options before the command, as with git -C; a command without a use for one ignores it.
run global-before 1 "$bin" --transport tcp:127.0.0.1:1 scan --duration 1 && expect_err global-before "nothing listens on port 1"
run global-before-eq 1 "$bin" --transport=tcp:127.0.0.1:1 info && expect_err global-before-eq "nothing listens on port 1"
run global-bond-dir 0 "$bin" --bond-dir "$tmp/no-bonds" bonds && expect_err global-bond-dir "no bonds in $tmp/no-bonds"
run global-ignored 0 "$bin" --transport tcp:127.0.0.1:1 decode ad 020106 && expect_out global-ignored "Flags"
# unpair: an address without its type finds the bond whatever its type; what bonds prints is input.
bond_file() {  # bond_file DIR ADDR TYPE
  local name; name=$(tr -d ':' <<<"$2")
  mkdir -p "$1"; chmod 700 "$1"
  printf 'version=1\nidentity=%s/%s\nsecure_connections=1\nauthenticated=0\nkey_size=16\nltk=000102030405060708090a0b0c0d0e0f\nltk_ediv=0\nltk_rand=0\n' "$2" "$3" >"$1/$name-$3.bond"
  chmod 600 "$1/$name-$3.bond"
}
B="$tmp/unpair"
bond_file "$B" C0:DE:00:00:00:07 random
run bonds-list 0 "$bin" bonds --bond-dir "$B" && expect_out bonds-list "C0:DE:00:00:00:07 (random-static)"
run unpair-untyped 0 "$bin" unpair C0:DE:00:00:00:07 --bond-dir "$B" && expect_err unpair-untyped "forgot C0:DE:00:00:00:07 (random-static)"
run unpair-gone 1 "$bin" unpair C0:DE:00:00:00:07 --bond-dir "$B" && expect_err unpair-gone "no bond for C0:DE:00:00:00:07 (of either type)"
bond_file "$B" C0:DE:00:00:00:07 random
run unpair-as-listed 0 "$bin" unpair "C0:DE:00:00:00:07 (random-static)" --bond-dir "$B" && expect_err unpair-as-listed "forgot"
bond_file "$B" C0:DE:00:00:00:07 random
run unpair-as-listed-unquoted 0 "$bin" unpair C0:DE:00:00:00:07 "(random-static)" --bond-dir "$B" && expect_err unpair-as-listed-unquoted "forgot"
bond_file "$B" C0:DE:00:00:00:07 random
run unpair-wrong-type 1 "$bin" unpair C0:DE:00:00:00:07/public --bond-dir "$B" && expect_err unpair-wrong-type "there is one for C0:DE:00:00:00:07 (random-static)"
bond_file "$B" C0:DE:00:00:00:07 public
run unpair-both-types 1 "$bin" unpair C0:DE:00:00:00:07 --bond-dir "$B" && expect_err unpair-both-types "name the one to forget"
run unpair-typed 0 "$bin" unpair C0:DE:00:00:00:07/random --bond-dir "$B" && expect_err unpair-typed "forgot C0:DE:00:00:00:07 (random-static)"
run unpair-left 0 "$bin" bonds --bond-dir "$B" && expect_out unpair-left "C0:DE:00:00:00:07 (public)"
run unpair-name 2 "$bin" unpair Thermo --bond-dir "$B" && expect_err unpair-name "not a name"
run global-unknown 2 "$bin" --frob scan && expect_err global-unknown "unknown global option --frob"
run global-no-value 2 "$bin" --transport && expect_err global-no-value "needs a value"
run global-no-command 2 "$bin" --transport tcp:127.0.0.1:1 && expect_err global-no-command "no command"

run ad 0 "$bin" decode ad $AD && { expect_out ad '"Thermo-1234"'; expect_out ad '"1809"'; expect_out ad "Apple"; }
run ad-json 0 "$bin" decode ad --json $AD && { expect_json_lines ad-json 1; expect_out ad-json '"Thermo-1234"'; }
run ad-truncated 1 "$bin" decode ad 0201060309 && { expect_out ad-truncated "Flags"; expect_err ad-truncated "offset 3"; }
run bad-hex 1 "$bin" decode ad 02 01 0g && expect_err bad-hex "bad hex"

# stdin: one packet per line; a bad line is reported with its number and the rest still decoded.
printf '# comment\n%s\nzz\n\n0201\n02 01 06\n' "$AD" >"$tmp/in"
run stdin 1 "$bin" decode ad --json <"$tmp/in" && { expect_json_lines stdin 3; expect_err stdin "line 3: bad hex"; expect_err stdin "line 5: malformed ad packet"; }

run sfloat 0 "$bin" decode sfloat 6c f1 && expect_out sfloat "36.4"
run sfloat-nan 0 "$bin" decode sfloat ff 07 && expect_out sfloat-nan "NaN"
run float 0 "$bin" decode float 72 01 00 ff && expect_out float "37.0"
run command 0 "$bin" decode command 0b 20 07 01 10 00 10 00 00 00 && expect_out command "HCI_LE_Set_Scan_Parameters"
run command-short 1 "$bin" decode command 0b 20 07 01 10 && expect_err command-short "malformed command packet"
run acl 0 "$bin" decode acl 40 20 07 00 03 00 04 00 0a 03 00 && expect_out acl "data_total_length: 7"

REPORT="04 3E 2A 02 01 00 01 E2FD1772E402 1E $AD C4"
run h4-report 0 "$bin" decode h4 $REPORT && { expect_out h4-report "HCI_LE_Advertising_Report"; expect_out h4-report "02:E4:72:17:FD:E2"; expect_out h4-report '"Thermo-1234"'; expect_out h4-report "rssi: -60"; }
run h4-report-json 0 "$bin" decode h4 --json $REPORT && expect_json_lines h4-report-json 1
run h4-cmd-complete 0 "$bin" decode h4 04 0e 04 01 03 0c 00 && { expect_out h4-cmd-complete "HCI_Reset"; expect_out h4-cmd-complete "Success"; }
run h4-unknown-event 0 "$bin" decode h4 04 ff 02 aa bb && expect_out h4-unknown-event "aa bb"
run h4-bad-indicator 1 "$bin" decode h4 07 00 00 && expect_err h4-bad-indicator "unknown"
run h4-length-mismatch 1 "$bin" decode h4 04 0e 05 01 03 0c 00 && expect_err h4-length-mismatch "offset"
run h4-acl-att 0 "$bin" decode h4 02 40 20 0c 00 08 00 04 00 1b 2a 00 00 6c 01 00 ff && { expect_out h4-acl-att "ATT_HANDLE_VALUE_NTF"; expect_out h4-acl-att "00 6c 01 00 ff"; }
run h4-acl-bad-att 1 "$bin" decode h4 02 40 20 05 00 01 00 04 00 0a && { expect_out h4-acl-bad-att "l2cap"; expect_err h4-acl-bad-att "malformed h4 packet"; }
run att-mtu 0 "$bin" decode att 02 05 02 && expect_out att-mtu "517"
run att-error 0 "$bin" decode att 01 08 01 00 0a && expect_out att-error "Attribute Not Found"
run att-group 0 "$bin" decode att --json 11 06 01 00 05 00 00 18 06 00 09 00 01 18 && { expect_json_lines att-group 1; expect_out att-group '1800'; }
run att-bad-list 1 "$bin" decode att 11 06 01 00 05 00 00 && expect_err att-bad-list "malformed att packet"
run smp-pairing 0 "$bin" decode smp 01 03 00 01 10 07 07 && expect_out smp-pairing "Pairing Request"
run smp-bad-keysize 1 "$bin" decode smp 01 03 00 01 06 07 07 && expect_err smp-bad-keysize "malformed smp packet"
run signaling 0 "$bin" decode signaling 12 01 08 00 18 00 28 00 00 00 2c 01 && expect_out signaling "L2CAP_CONNECTION_PARAMETER_UPDATE_REQ"; expect_out signaling "timeout_multiplier: 300"

# Controller commands fail clearly where they cannot reach a controller. This machine has
# no AF_BLUETOOTH; on one that has, the kernel paths are tested in the VM tests instead.
if ! python3 -c 'import socket; socket.socket(31, socket.SOCK_RAW, 1)' 2>/dev/null; then
  run list-no-bt 1 "$bin" list && expect_err list-no-bt "no Bluetooth support"
  run user-no-bt 1 "$bin" scan --transport user:hci0 --duration 1 && { expect_err user-no-bt "no Bluetooth support"; expect_err user-no-bt "tcp:HOST:PORT"; }
  run raw-no-bt 1 "$bin" info --transport raw:hci0 && expect_err raw-no-bt "modprobe bluetooth"
  run l2cap-no-bt 1 "$bin" gatt F0:F1:F2:F3:F4:01 --transport l2cap:hci0 && expect_err l2cap-no-bt "no Bluetooth support"
  run default-no-bt 1 env -u HCIGATT_TRANSPORT "$bin" scan --duration 1 && expect_err default-no-bt "no --transport given"
  # The gateway over the kernel's route ends (it does not retry a kernel without Bluetooth).
  run gw-l2cap-no-bt 1 timeout 20 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --device C0:DE:00:00:00:01 --transport l2cap:hci0 \
    --spool "$tmp/gw-l2cap-spool" && expect_err gw-l2cap-no-bt "no Bluetooth support"
fi
run serial-missing 1 "$bin" info --transport serial:/dev/hcigatt-no-such-tty && expect_err serial-missing "no such serial device"
run tcp-refused 1 "$bin" scan --transport tcp:127.0.0.1:1 --duration 1 && expect_err tcp-refused "connection refused"
run bad-transport 2 "$bin" scan --transport bluetooth-over-pigeon && expect_err bad-transport "tcp:HOST:PORT"
run replay-missing 1 "$bin" replay /nonexistent.btsnoop && expect_err replay-missing "/nonexistent.btsnoop"
printf 'not a btsnoop file at all' >"$tmp/bad.btsnoop"
run replay-bad 1 "$bin" replay "$tmp/bad.btsnoop" && expect_err replay-bad "btsnoop"
run l2cap-by-name 2 "$bin" gatt Thermo --transport l2cap:hci0 && expect_err l2cap-by-name "give the device's address"
run l2cap-bad 2 "$bin" read F0:F1:F2:F3:F4:01 2a00 --transport l2cap:usb0 && expect_err l2cap-bad "l2cap:hci0"
run cmd-bad-opcode 2 "$bin" cmd 0x12 && expect_err cmd-bad-opcode "4 hex digits"

run char-temp 0 "$bin" decode char 2a1c 07 DA 03 00 FF EA 07 0B 1D 11 21 05 01 && expect_out char-temp "98.6 °F, armpit, 2026-11-29 17:33:05"
run char-hr 0 "$bin" decode char 2A37 --json 1F 48 00 2C 01 33 03 40 03 00 03 00 04 && { expect_json_lines char-hr 1; expect_out char-hr '"heart_rate":72'; }
run char-bp-nan 0 "$bin" decode char 2a35 00 FF 07 FF 07 FF 07 && expect_out char-bp-nan "NaN"
run char-truncated 1 "$bin" decode char 2a1c 07 da 03 && expect_err char-truncated "malformed characteristic value"
run char-unknown 2 "$bin" decode char 1234 00 && expect_err char-unknown "no decoder for 1234"
run char-battery-bad 1 "$bin" decode char 2a19 65 && expect_err char-battery-bad "malformed"

for extra in "$(dirname "$0")"/run-*.sh; do
  [ -e "$extra" ] || continue
  # shellcheck source=/dev/null
  source "$extra"
done

if [ "$failures" -ne 0 ]; then echo "CLI tests: $failures failed"; exit 1; fi
echo "CLI tests: all passed"
