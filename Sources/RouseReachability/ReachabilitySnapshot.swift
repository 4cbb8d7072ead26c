import Dispatch
import RouseNetlink
import Synchronization

/// One-shot views of the kernel's routing state for status displays (`rouse reach status`). Not used
/// by the monitor's decisions, which always ask the kernel per target.
public enum ReachabilitySnapshot {
    /// Default routes (`/0`, unicast, all tables) of both families, dumped from the kernel. With a
    /// namespace path the dump runs on a short-lived thread that entered that namespace.
    public static func defaultRoutes(networkNamespacePath: String? = nil) throws(ReachabilityError) -> [RouteMessage] {
        guard let networkNamespacePath else { return try dumpDefaultRoutes() }
        let outcome = Mutex<Result<[RouteMessage], ReachabilityError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let body: @Sendable () -> Void = {
            defer { done.signal() }
            let result: Result<[RouteMessage], ReachabilityError>
            do throws(ReachabilityError) {
                do throws(NetlinkError) {
                    try NetlinkSystem.enterNetworkNamespace(path: networkNamespacePath)
                } catch {
                    throw ReachabilityError(.netlink, "entering \(networkNamespacePath)", underlying: error)
                }
                result = .success(try dumpDefaultRoutes())
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
        }
        do throws(NetlinkError) {
            try NetlinkSystem.startThread(name: "rouse-snapshot", body)
        } catch {
            throw ReachabilityError(.netlink, "starting a thread", underlying: error)
        }
        done.wait()
        switch outcome.withLock({ $0 }) {
        case .success(let routes): return routes
        case .failure(let error): throw error
        case nil: return []
        }
    }

    private static func dumpDefaultRoutes() throws(ReachabilityError) -> [RouteMessage] {
        do throws(NetlinkError) {
            let socket = try NetlinkSocket(groups: 0)
            defer { socket.close() }
            let events = try socket.exchange(.dump(.routes, sequence: socket.makeSequence()))
            return events.compactMap { event in
                if case .newRoute(let route) = event, route.isDefault, route.kind == .unicast { return route }
                return nil
            }
        } catch {
            throw ReachabilityError(.netlink, "dumping routes", underlying: error)
        }
    }
}
