// RouseCurl
