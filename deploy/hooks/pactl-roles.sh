#!/bin/sh
# Example rouse-agent activation hook: applies the arbiter's grants to PulseAudio streams by role.
#
# rouse-agent runs the hook once per grant or revoke (docs/activations.md, "Hook"):
#   argv: pactl-roles.sh grant|revoke
#   env:  ROUSE_EVENT ROUSE_SESSION ROUSE_HANDLER ROUSE_ROLE ROUSE_CATEGORY ROUSE_MODE ROUSE_OPTIONS
#         ROUSE_ACTIVE_ROLES   roles of every active session after the step (comma-separated)
#         ROUSE_DUCKING_ROLES  roles of active sessions with duckOthers after the step
#
# This script is level-triggered: it looks only at the two *_ROLES variables, so a lost or repeated event
# does no lasting harm. For every sink-input whose media.role is in ROUSE_PACTL_ROLES (default
# "music video", what module-role-cork/-ducking act on):
#   - while a call, alert or assistant session is active: mute it (pactl cannot send PulseAudio's cork
#     request; muting is the other half of what module-role-cork does);
#   - else while a session with duckOthers is active: set its volume to ROUSE_PACTL_DUCK_VOLUME (default 30%);
#   - else: unmute it and set its volume back to 100%.
# It restores to 100 %/unmuted, not to what the user had set: it is an example, not a policy engine.
#
# Without pactl, or with no PulseAudio (or pipewire-pulse) server answering, it exits 0 doing nothing.
set -u

# The server: the session's (per-user mode: rouse-agent hands the hook the session's PULSE_SERVER, XDG_RUNTIME_DIR
# and the like), or, for a system agent acting on one user's server, ROUSE_PACTL_SERVER (for example
# unix:/run/user/1000/pulse/native) and ROUSE_PACTL_COOKIE (the path of that user's cookie file, which a user's
# server checks; as PULSE_COOKIE).
[ -n "${ROUSE_PACTL_SERVER:-}" ] && export PULSE_SERVER="$ROUSE_PACTL_SERVER"
[ -n "${ROUSE_PACTL_COOKIE:-}" ] && export PULSE_COOKIE="$ROUSE_PACTL_COOKIE"

command -v pactl >/dev/null 2>&1 || exit 0
pactl info >/dev/null 2>&1 || exit 0

roles=${ROUSE_PACTL_ROLES:-music video}
duck_volume=${ROUSE_PACTL_DUCK_VOLUME:-30%}

mute=0
case ",${ROUSE_ACTIVE_ROLES:-}," in
*,call,* | *,alert,* | *,assistant,*) mute=1 ;;
esac
duck=0
[ -n "${ROUSE_DUCKING_ROLES:-}" ] && duck=1

# "ID ROLE" for every sink-input that has a media.role property.
LC_ALL=C pactl list sink-inputs 2>/dev/null | awk '
    /^Sink Input #/ { id = substr($3, 2) }
    /media\.role = / { role = $3; gsub(/"/, "", role); print id, role }
' | while read -r id role; do
    case " $roles " in
    *" $role "*) ;;
    *) continue ;;
    esac
    if [ "$mute" = 1 ]; then
        pactl set-sink-input-mute "$id" 1
    elif [ "$duck" = 1 ]; then
        pactl set-sink-input-mute "$id" 0
        pactl set-sink-input-volume "$id" "$duck_volume"
    else
        pactl set-sink-input-mute "$id" 0
        pactl set-sink-input-volume "$id" 100%
    fi
done
exit 0
