// The IPC protocol's model (``AgentRequest``, ``AgentEvent``, ``FrameCodec``) is RouseWire's, shared with the
// agent; a handler program imports this library alone.
@_exported import RouseWire
