import Glibc

// Passing open descriptors over a Unix socket (`SCM_RIGHTS`): a handler hands the agent a file to upload, the
// agent hands a handler a finished download. One implementation for both ends.
//
// Hand-written: the `CMSG_*` macros do not import into Swift; the layout below is Linux's on 64-bit targets
// (`struct cmsghdr` is a `size_t` length and two `int`s, 16 bytes, data 8-byte aligned), checked at run time
// against `MemoryLayout<cmsghdr>`. Errno policy as in `Syscalls.swift`.

extension Sys {
    /// Most descriptors one read takes; more in one message are closed by the kernel (`MSG_CTRUNC`).
    package static let maxDescriptorsPerRead = 4
    private static let controlHeader = MemoryLayout<cmsghdr>.size
    private static func controlAlign(_ length: Int) -> Int { (length + 7) & ~7 }

    /// Sends all of `bytes`, `descriptor` attached to the first byte (`SCM_RIGHTS`); `nonBlocking`: throw `EAGAIN`
    /// instead of waiting for room in a full socket buffer.
    package static func sendAll(_ socket: Int32, _ bytes: [UInt8], descriptor: Int32, nonBlocking: Bool = false)
        throws(SystemError)
    {
        precondition(controlHeader == 16, "cmsghdr layout")
        let flags = Int32(MSG_NOSIGNAL) | (nonBlocking ? Int32(MSG_DONTWAIT) : 0)
        var control = [UInt8](repeating: 0, count: controlHeader + controlAlign(MemoryLayout<Int32>.size))
        control.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: controlHeader + MemoryLayout<Int32>.size, toByteOffset: 0, as: Int.self)
            raw.storeBytes(of: SOL_SOCKET, toByteOffset: 8, as: Int32.self)
            raw.storeBytes(of: Int32(SCM_RIGHTS), toByteOffset: 12, as: Int32.self)
            raw.storeBytes(of: descriptor, toByteOffset: controlHeader, as: Int32.self)
        }
        // The descriptor goes with the first call that writes at least one byte; the rest as plain sends.
        var offset = 0
        var attached = false
        while offset < bytes.count {
            let written: Int = bytes[offset...].withUnsafeBytes { data in
                var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: data.baseAddress), iov_len: data.count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    control.withUnsafeMutableBytes { controlBytes in
                        var message = msghdr()
                        message.msg_iov = vectorPointer
                        message.msg_iovlen = 1
                        if !attached {
                            message.msg_control = controlBytes.baseAddress
                            message.msg_controllen = controlBytes.count
                        }
                        return sendmsg(socket, &message, flags)
                    }
                }
            }
            if written < 0 {
                if Glibc.errno == EINTR { continue }
                throw SystemError(call: "sendmsg", code: .current)
            }
            attached = true
            offset += written
        }
    }

    /// One read of up to `capacity` bytes: the bytes (empty: the peer closed), the descriptors that came with them
    /// (close-on-exec, owned by the caller) and whether some were dropped for lack of room (`MSG_CTRUNC`).
    package static func receiveWithDescriptors(_ socket: Int32, capacity: Int = 65536) throws(SystemError) -> (
        bytes: [UInt8], descriptors: [Int32], truncated: Bool
    ) {
        precondition(controlHeader == 16, "cmsghdr layout")
        var buffer = [UInt8](repeating: 0, count: capacity)
        var control = [UInt8](
            repeating: 0, count: controlHeader + controlAlign(maxDescriptorsPerRead * MemoryLayout<Int32>.size))
        while true {
            var flagsOut: Int32 = 0
            var controlUsed = 0
            let count: Int = buffer.withUnsafeMutableBytes { data in
                var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    control.withUnsafeMutableBytes { controlBytes in
                        var message = msghdr()
                        message.msg_iov = vectorPointer
                        message.msg_iovlen = 1
                        message.msg_control = controlBytes.baseAddress
                        message.msg_controllen = controlBytes.count
                        let result = recvmsg(socket, &message, Int32(MSG_CMSG_CLOEXEC))
                        flagsOut = message.msg_flags
                        controlUsed = Int(message.msg_controllen)
                        return result
                    }
                }
            }
            if count < 0 {
                if Glibc.errno == EINTR { continue }
                throw SystemError(call: "recvmsg", code: .current)
            }
            var descriptors: [Int32] = []
            control.withUnsafeBytes { raw in
                var offset = 0
                while offset + controlHeader <= controlUsed {
                    let length = raw.load(fromByteOffset: offset, as: Int.self)
                    let level = raw.load(fromByteOffset: offset + 8, as: Int32.self)
                    let type = raw.load(fromByteOffset: offset + 12, as: Int32.self)
                    guard length >= controlHeader, offset + length <= controlUsed else { break }
                    if level == SOL_SOCKET && type == Int32(SCM_RIGHTS) {
                        let fdCount = (length - controlHeader) / MemoryLayout<Int32>.size
                        for index in 0..<fdCount {
                            let at = offset + controlHeader + index * MemoryLayout<Int32>.size
                            descriptors.append(raw.loadUnaligned(fromByteOffset: at, as: Int32.self))
                        }
                    }
                    offset += controlAlign(length)
                }
            }
            return (Array(buffer.prefix(count)), descriptors, flagsOut & Int32(MSG_CTRUNC) != 0)
        }
    }
}
