from sysctl_advisor.entry import main

main()
