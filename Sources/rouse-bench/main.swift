print("rouse-bench")
