# Sourced by Tests/cli/run.sh: the gateway's and the sensor decoders' usage and input errors.
run gw-no-mqtt 2 "$bin" gateway --scan && expect_err gw-no-mqtt "missing --mqtt"
run gw-bad-uri 2 "$bin" gateway --mqtt http://x --scan && expect_err gw-bad-uri "mqtt://HOST[:PORT]"
run gw-nothing 2 "$bin" gateway --mqtt mqtt://127.0.0.1 && expect_err gw-nothing "give --scan"
run gw-style 2 "$bin" gateway --mqtt mqtt://127.0.0.1 --scan --topic-style aws && expect_err gw-style "hcigatt or theengs"
run gw-spool-max 2 "$bin" gateway --mqtt mqtt://127.0.0.1 --scan --spool-max 1K && expect_err gw-spool-max "at least 16K"
run gw-id 2 "$bin" gateway --mqtt mqtt://127.0.0.1 --scan --gateway-id a/b && expect_err gw-id "topic level"
run gw-bindkey 2 "$bin" gateway --mqtt mqtt://127.0.0.1 --scan --bindkey A4:C1:38:12:34:56=00 && expect_err gw-bindkey "32 hex digits"
run gw-ca-plain 2 "$bin" gateway --mqtt mqtt://127.0.0.1 --scan --ca-file /etc/hostname && expect_err gw-ca-plain "mqtts://"
run gw-nocheck-system 2 "$bin" gateway --mqtt mqtts://192.0.2.7 --scan --no-hostname-check && expect_err gw-nocheck-system "would take any public certificate for any name"
run gw-pin-bad 2 "$bin" gateway --mqtt mqtts://192.0.2.7 --scan --pin-sha256 abcd && expect_err gw-pin-bad "--pin-sha256 takes the SHA-256 of the broker's certificate, 64 hex digits"
run gw-pin-plain 2 "$bin" gateway --mqtt mqtt://192.0.2.7 --scan --pin-sha256 $(printf '%064d' 0) && expect_err gw-pin-plain "--pin-sha256 is for TLS"
run gw-ca-missing 2 "$bin" gateway --mqtt mqtts://127.0.0.1 --scan --ca-file /nonexistent.pem && expect_err gw-ca-missing "cannot read /nonexistent.pem"
run gw-no-password-option 2 "$bin" gateway --mqtt mqtt://127.0.0.1 --scan --password x && expect_err gw-no-password-option "unknown option --password"
printf '# a comment\nmqtt mqtt://127.0.0.1:1\n\nscan\nfrobnicate 3\n' >"$tmp/gw.conf"
run gw-config-unknown 2 "$bin" gateway --config "$tmp/gw.conf" && expect_err gw-config-unknown "line 5: unknown option 'frobnicate'"
printf 'mqtt=mqtt://127.0.0.1:1\n--scan\nspool-max 1K\n' >"$tmp/gw2.conf"
run gw-config-value 2 "$bin" gateway --config "$tmp/gw2.conf" && expect_err gw-config-value "at least 16K"
# The command line wins over the file.
run gw-config-override 2 "$bin" gateway --config "$tmp/gw2.conf" --spool-max 2K && expect_err gw-config-override "not '2K'"
run gw-config-missing 2 "$bin" gateway --config /nonexistent.conf && expect_err gw-config-missing "cannot read /nonexistent.conf"
# Over the kernel's L2CAP route (l2cap:hciN) the kernel keeps the controller: no scan, and
# devices by address only; a typo in --transport is a usage error before anything starts.
run gw-l2cap-scan 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --scan --transport l2cap:hci0 && expect_err gw-l2cap-scan "--scan needs the controller"
run gw-l2cap-name 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --device C0:DE:00:00:00:01 --device Thermo-1 --transport l2cap:hci0 \
  && expect_err gw-l2cap-name "give each --device by its address"
run gw-l2cap-params 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --device C0:DE:00:00:00:01 --conn-interval 50 --transport l2cap:hci0 \
  && expect_err gw-l2cap-params "the kernel owns the link"
run gw-l2cap-adapter 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --device C0:DE:00:00:00:01 --transport l2cap:usb0 && expect_err gw-l2cap-adapter "l2cap:hci0"
run gw-transport-typo 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --scan --transport tpc:127.0.0.1:1 && expect_err gw-transport-typo "tpc:127.0.0.1:1"
# An unwritable spool is said at once, before the radio or the broker.
run gw-spool-bad 1 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --scan --spool /proc/hcigatt-spool && expect_err gw-spool-bad "/proc/hcigatt-spool"

# Broadcast sensors in decode ad.
run ad-bthome 0 "$bin" decode ad --json 0a16d2fc4002c40903bf13 && expect_out ad-bthome '"sensor":{"format":"bthome","version":2,"encrypted":false,"temperature":25.0,"humidity":50.55}'
run ad-bthome-key 0 "$bin" decode ad --json 1216d2fc41a47266c95f730011223378237214 --bindkey 54:48:E6:8F:80:A5=231d39c1d7cc1ab1aee224cd096db932 \
  && expect_out ad-bthome-key '"counter":857870592,"temperature":25.06,"humidity":50.55'
run ad-bthome-nokey 0 "$bin" decode ad 1216d2fc41a47266c95f730011223378237214 && expect_out ad-bthome-nokey "no bind key"
run ad-ruuvi 0 "$bin" decode ad 1bff99040512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F && expect_out ad-ruuvi "temperature: 24.3"
run ad-bindkey-kind 2 "$bin" decode att 0a --bindkey 54:48:E6:8F:80:A5=231d39c1d7cc1ab1aee224cd096db932 && expect_err ad-bindkey-kind "for decode ad"
# Commands from MQTT: a mode, and only for --device devices.
run gw-commands-mode 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --device C0:DE:00:00:00:01 --commands all && expect_err gw-commands-mode "read or write"
run gw-commands-scan 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --scan --commands read && expect_err gw-commands-scan "devices given with --device"
# Write commands: TLS and credentials, or said to be insecure; an allow-list with write only.
run gw-write-plain 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --device C0:DE:00:00:00:01 --commands write && expect_err gw-write-plain "it needs an mqtts:// URI and --credentials"
run gw-write-nocreds 2 "$bin" gateway --mqtt mqtts://broker.example:8883 --device C0:DE:00:00:00:01 --commands write && expect_err gw-write-nocreds "it needs an mqtts:// URI and --credentials"
run gw-allow-read 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --device C0:DE:00:00:00:01 --commands read --commands-allow 2A21 && expect_err gw-allow-read "it goes with --commands write"
run gw-allow-bad 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --device C0:DE:00:00:00:01 --commands write --commands-insecure --commands-allow 2A21,nope && expect_err gw-allow-bad "--commands-allow takes a UUID (2A21, or 128-bit), not 'nope'"
run gw-insecure-alone 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --device C0:DE:00:00:00:01 --commands-insecure && expect_err gw-insecure-alone "--commands-insecure is about --commands write"
run gw-records-scan 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --scan --records && expect_err gw-records-scan "stored records of the devices given with --device"
run gw-proc-timeout 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --device AA:BB:CC:DD:EE:FF --procedure-timeout 5 && expect_err gw-proc-timeout "--procedure-timeout bounds the --records fetch: give --records too"
run gw-proc-timeout-bad 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --device AA:BB:CC:DD:EE:FF --records --procedure-timeout soon && expect_err gw-proc-timeout-bad "--procedure-timeout takes seconds (0 < S <= 86400), not 'soon'"
# Scan filters, presence and the rate limit: about what --scan publishes, checked first.
run gw-presence-noscan 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --device C0:DE:00:00:00:01 --presence && expect_err gw-presence-noscan "add --scan"
run gw-allow-noscan 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --device C0:DE:00:00:00:01 --allow ATC && expect_err gw-allow-noscan "--allow is about what --scan publishes"
run gw-allow-typo 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --scan --allow C0:DE:00:00:00:0G && expect_err gw-allow-typo "not 'C0:DE:00:00:00:0G'"
run gw-deny-service 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --scan --deny service:XYZ && expect_err gw-deny-service "--deny takes"
run gw-away-alone 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --scan --away-timeout 30 && expect_err gw-away-alone "for --presence"
run gw-away-range 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --scan --presence --away-timeout 1 && expect_err gw-away-range "--away-timeout takes seconds"
run gw-interval-zero 2 "$bin" gateway --mqtt mqtt://127.0.0.1:1 --scan --min-interval 0 && expect_err gw-interval-zero "--min-interval takes seconds"
