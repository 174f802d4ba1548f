from grove.runtime.cli import main

main()
