// RouseSystem
