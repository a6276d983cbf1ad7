/* placeholder */ typedef int core_placeholder;
