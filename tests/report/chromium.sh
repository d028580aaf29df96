# Headless Chromium for the report tests. Sourced, not run.
#   find_chromium            sets CHROMIUM, or returns 1
#   run_chromium DIR ARGS... one headless run with a fresh profile under DIR,
#                            its log (console messages included) on stderr
# The flags keep it off the network (this machine has none) and quiet.

find_chromium() {
  CHROMIUM="${CHROMIUM:-}"
  if [ -z "$CHROMIUM" ]; then
    CHROMIUM="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
  fi
  [ -n "$CHROMIUM" ] && [ -x "$CHROMIUM" ]
}

run_chromium() {
  local dir="$1"
  shift
  local profile
  profile="$(mktemp -d "$dir/chromium-profile.XXXXXX")"
  DBUS_SESSION_BUS_ADDRESS=disabled: timeout -k 10 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu \
    --disable-quic --no-first-run --disable-background-networking --disable-component-update \
    --disable-sync --disable-dev-shm-usage --disable-extensions --mute-audio \
    --user-data-dir="$profile" --enable-logging=stderr --v=0 "$@"
  local rc=$?
  rm -rf "$profile"
  return $rc
}
