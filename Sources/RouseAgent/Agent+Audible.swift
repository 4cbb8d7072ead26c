import Logging
import RouseAgentCore
import RouseSystem

/// Audible background audio (iOS: "Apps that play audio content in the background must play audible content and not
/// silence"). A handler in the background that only playback sessions keep from being frozen is watched
/// (``AudibleAudioWatch``): its streams are checked (``AudioStreamProbe``, off the executor) when its background time
/// would otherwise end, then every `silent-audio-grace-seconds`; silent for a whole grace period, its sessions stop
/// protecting it (``ActivationCoordinator/silence(_:)``) and it is frozen like any other, its sessions interrupted. The
/// checks need an audio server named by the session's environment (`PULSE_SERVER` or `XDG_RUNTIME_DIR`): without one
/// nothing is checked and the sessions protect as before. No timer runs while no handler is watched.
extension Agent {
    /// The environment that names the session's audio server (per-user mode: the user's session).
    var audioEnvironment: [String: String] { sessionEnvironment }

    /// Brings every handler's watch in step with its lifecycle and sessions, then arms the checks' timer. Called
    /// before the rules' timer is rescheduled (after every step of the rules or the activations).
    func syncAudibleAudio() {
        let server = AudioStreamProbe.hasServer(audioEnvironment)
        let current = now
        audible.watches = audible.watches.filter { handlers.contains($0.key) }  // (a reload may drop handlers)
        for name in handlers.names {
            guard let machine = handlers.machine(of: name) else { continue }
            let protected = server && machine.lifecycle == .background && activations.protectedOnlyByPlayback(name)
            var watch = audible.watches[name] ?? AudibleAudioWatch()
            let wasSilenced = watch.silenced
            watch.protected(protected, now: current, firstCheckAfter: machine.rules.suspendAfter)
            if wasSilenced && !watch.silenced {
                activations.unsilence(name)
                _ = applyAudioHolds()  // the rules' timer is being rescheduled (this runs before it)
            }
            audible.watches[name] = watch.watching ? watch : nil
        }
        guard let next = audible.nextCheck else {
            audible.timer.cancel()
            return
        }
        audible.timer.arm(at: time.instant(next)) { await self.audibleTick($0) }
    }

    private func audibleTick(_ generation: UInt64) {
        guard audible.timer.fired(generation) else { return }
        let current = now
        let environment = audioEnvironment
        for (name, watch) in audible.watches where watch.isDue(now: current) {
            audible.watches[name]?.checkStarted()
            let pids: Set<Int32>
            if let process = handlers.process(of: name) {
                pids = Set(HeldResourceProbe.pids(cgroup: process.cgroup, processGroup: process.pid))
            } else if let pid = handlers.connection(of: name)?.peer?.pid {
                pids = [pid]  // connected, not launched by this agent: its own process only
            } else {
                audioObserved(name, .unavailable("no process"))
                continue
            }
            Sys.detachedThread(name: "rouse-agent-audible") {
                let observation = AudioStreamProbe.observe(pids: pids, environment: environment)
                Task { await self.audioObserved(name, observation) }
            }
        }
        syncAudibleAudio()
    }

    /// A check of `name`'s streams saw `observation`.
    func audioObserved(_ name: String, _ observation: AudibleAudioWatch.Observation) {
        guard var watch = audible.watches[name], let configuration = handlers.configuration(of: name) else { return }
        freezeChecks.counters.audibleChecks += 1
        var metadata: Logger.Metadata = ["handler": "\(name)", "observation": "\(observation)"]
        logger.debug("background playback checked", metadata: metadata)
        let silenced = watch.observed(observation, now: now, grace: configuration.freeze.silentAudioGrace)
        audible.watches[name] = watch
        if silenced {
            freezeChecks.counters.silentAudio += 1
            metadata["grace"] = "\(configuration.freeze.silentAudioGrace)"
            logger.notice("background playback silent past its grace: the handler may be frozen", metadata: metadata)
            activations.silence(name)
            _ = applyAudioHolds()
        }
        rescheduleTimer()
    }
}
